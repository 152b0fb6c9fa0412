"""The documents prove their claims by naming tests; every test they name must exist, so a
renamed or deleted test cannot leave a claim pointing at nothing."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {".venv", "node_modules", "target", ".git"}
# `tests/x/test_y.py`, optionally followed by `::name` parts.
PATH_REF = re.compile(r"(tests/[\w/]+\.py)((?:::\w+)*)")
# A test module, function, class or directory named on its own (`test_cork`, `::test_a_b`).
BARE_NAME = re.compile(r"\b(test_\w+)\b")
# A test function defined in a document's own code example.
EXAMPLE_DEF = re.compile(r"^(?:async )?def (test_\w+)\(", re.MULTILINE)


def documents() -> list[Path]:
    return sorted(
        p for p in ROOT.rglob("*.md") if not SKIPPED_DIRS & set(p.relative_to(ROOT).parts)
    )


@cache
def defined_in(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text())
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, kinds))


@cache
def every_test_name() -> frozenset[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("*"):
        names.add(path.stem if path.suffix == ".py" else path.name)
        if path.suffix == ".py":
            names |= defined_in(path)
    return frozenset(names)


def test_the_documents_name_tests_at_all() -> None:
    assert sum(len(BARE_NAME.findall(doc.read_text())) for doc in documents()) > 100


def test_every_test_a_document_names_exists() -> None:
    missing = []
    for doc in documents():
        text = doc.read_text()
        where = doc.relative_to(ROOT)
        for match in PATH_REF.finditer(text):
            path = ROOT / match.group(1)
            if not path.is_file():
                missing.append(f"{where}: {match.group(0)} (no such file)")
                continue
            for name in filter(None, match.group(2).split("::")):
                if name not in defined_in(path):
                    missing.append(f"{where}: {match.group(0)} ({name} is not in the file)")
        # A test an example defines (docs/testing.md's, which are run as written) exists there.
        own = set(EXAMPLE_DEF.findall(text))
        missing += [
            f"{where}: {name}"
            for name in BARE_NAME.findall(text)
            if name not in every_test_name() and name not in own
        ]
    assert not missing, "documents name tests that do not exist:\n" + "\n".join(missing)
