"""Another revision's copy of one of our modules, imported beside the current one.

Benchmarks that compare a change alternate the two inside one process: on this kind of
shared machine whole runs of identical code differ by up to 40 %, more than most changes.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType


def module_at(rev: str, path: str) -> ModuleType:
    """The module at `path` (from the repository root) as it was at `rev` (`git show`),
    imported under a name of its own; its imports resolve to the current tree."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    name = f"{Path(path).stem}_at_{rev.replace('-', '_').replace('/', '_')}"
    with tempfile.TemporaryDirectory(prefix="longboat-rev-") as tmp:
        file = Path(tmp) / f"{name}.py"
        file.write_text(source)
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while building a class
        spec.loader.exec_module(module)
    return module
