"""The example in docs/store.md runs and does what its comments say."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "store.md"


def test_store_doc_example_runs_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)[0]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the example's store goes
    scope: dict[str, object] = {}
    exec(compile(example, str(DOC), "exec"), scope)
    assert scope["bodies"] == [b"order 0", b"order 1", b"order 2"]
    assert scope["arrivals"] == [3]
    assert b"order 1" in scope["hit"]  # type: ignore[operator]
    # Copied as it is, the example must not leave a store (a 1 GiB segment) in /tmp.
    assert list(tmp_path.iterdir()) == []
