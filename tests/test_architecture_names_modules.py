"""ARCHITECTURE.md is the map of the tree: every package and every module of more than 100
lines has its line there, so a new one is found on the map or this test names it.

A package is named as its folder below `src/longboat/` in backticks (`broker/core/`), or
`pyspark_longboat/`; a module as its path below `src/longboat/` (`store/segments.py`).  The
root package `longboat` is the whole tree, named by the document itself.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
LONGBOAT = SRC / "longboat"
MAP = ROOT / "ARCHITECTURE.md"
MODULE_LINES = 100


def _name(path: Path) -> str:
    """How the map names a file or folder of src/: below src/longboat/, else below src/."""
    base = LONGBOAT if path.is_relative_to(LONGBOAT) else SRC
    return path.relative_to(base).as_posix()


def packages() -> list[str]:
    return sorted(
        f"{_name(init.parent)}/" for init in SRC.rglob("__init__.py") if init.parent != LONGBOAT
    )


def large_modules() -> list[str]:
    return sorted(
        _name(module)
        for module in SRC.rglob("*.py")
        if len(module.read_text(encoding="utf-8").splitlines()) > MODULE_LINES
    )


def test_every_package_has_its_line() -> None:
    text = MAP.read_text(encoding="utf-8")
    missing = [name for name in packages() if f"`{name}`" not in text]
    assert not missing, f"ARCHITECTURE.md names no line for these packages: {missing}"


def test_every_module_over_100_lines_has_its_line() -> None:
    text = MAP.read_text(encoding="utf-8")
    missing = [name for name in large_modules() if f"`{name}`" not in text]
    assert not missing, (
        f"ARCHITECTURE.md's module map has no line for these modules of more than "
        f"{MODULE_LINES} lines (add one each: what it does): {missing}"
    )


def test_the_rule_sees_the_tree() -> None:
    """The walk finds what the map must hold (a wrong root would pass the tests above)."""
    assert "broker/core/" in packages() and "pyspark_longboat/" in packages()
    assert "store/segments.py" in large_modules()
