"""`python -m longboat.cli` runs the `longboat` command."""

from __future__ import annotations

from longboat.cli.main import main

main()
