"""`longboat ARGS` run in-process with click's runner, against the name server a test names."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner, Result

from longboat.cli.main import cli

Invoke = Callable[..., Result]


def cli_against(namesrv_addr: str, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """A function running `longboat ARGS` (through $LONGBOAT_NAMESRV) that asserts its exit
    code (`code=`, 0 by default) and returns click's result."""
    monkeypatch.setenv("LONGBOAT_NAMESRV", namesrv_addr)
    monkeypatch.setenv("COLUMNS", "250")

    def invoke(*args: str, input: str | None = None, code: int = 0) -> Result:
        result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
        assert result.exit_code == code, (args, result.output)
        return result

    return invoke
