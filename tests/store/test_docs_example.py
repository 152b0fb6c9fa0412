"""The example in docs/store.md runs and does what its comments say."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "store.md"


def test_store_doc_example_runs() -> None:
    example = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)[0]
    scope: dict[str, object] = {}
    exec(compile(example, str(DOC), "exec"), scope)
    assert scope["bodies"] == [b"order 0", b"order 1", b"order 2"]
    assert scope["arrivals"] == [3]
    assert b"order 1" in scope["hit"]  # type: ignore[operator]
