"""bench/README.md is generated from the recorded results (`python -m bench.report`): the
committed page is what the committed results make, and the targets table comes first."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import report, results  # noqa: E402


def test_the_committed_page_is_what_the_committed_results_make() -> None:
    assert report.main(["--check"]) == 0


def test_the_page_opens_with_every_target_then_each_benchmark(tmp_path: Path) -> None:
    page = {
        "targets": [{"figure": "appends", "target": ">= 300000", "value": "1", "met": False}],
        "tables": [{"title": "per run", "columns": ["run", "msgs/s"], "rows": [["1", "1"]]}],
    }
    results.save(
        results.record("store_bench", sizes={"messages": 10}, runs=[{"msgs_per_s": 1.0}],
                       page=page),
        tmp_path / "results" / "store_bench.json",
    )  # fmt: skip
    out = tmp_path / "README.md"
    assert report.main(["--results", str(tmp_path / "results"), "--out", str(out)]) == 0
    text = out.read_text()
    targets, store = text.index("## Targets"), text.index("## store_bench")
    assert targets < store
    assert "| store_bench | appends | >= 300000 | 1 | **missed** |" in text
    assert "Sizes: messages 10." in text and "| 1 | 1 |" in text
    assert report.method("store_bench") in text  # how it measures, from its docstring
    assert report.main(["--results", str(tmp_path / "results"), "--out", str(out), "--check"]) == 0
