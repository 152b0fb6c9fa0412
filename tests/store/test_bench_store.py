"""The store benchmark stays runnable: one tiny run, every table printed and recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.results import markdown_row

REPO = Path(__file__).resolve().parents[2]
BATCH_ROW = "ASYNC_FLUSH append 256 B, batch of 100, encoded (the broker's batch path)"


def test_store_benchmark_runs_and_prints_its_tables(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.store_bench", "--runs", "1", "--messages", "800",
         "--sync-messages", "32", "--recovery-gib", "0.002", "--dir", str(tmp_path),
         "--json", str(tmp_path / "store_bench.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    ).stdout  # fmt: skip
    assert "| ASYNC_FLUSH append 256 B, batch of 100 |" in out
    assert "| SYNC_FLUSH append 4096 B, 16 writer(s), each waits |" in out
    assert "| read by queue, 256 B, batches of 100 by queue, pulls of 32 |" in out
    assert "| read by queue, 256 B, single appends, queues in turn, pulls of 32 |" in out
    assert "| read by queue, 256 B, batches of 500, queues in turn, pulls of 1,024 |" in out
    assert "| mmap slice 300 B |" in out
    assert "| open with no checkpoint" in out
    result = json.loads((tmp_path / "store_bench.json").read_text())
    assert result["benchmark"] == "store_bench" and result["sizes"]["messages"] == 800
    printed = [row for table in result["page"]["tables"] for row in table["rows"]]
    assert all(markdown_row(row) in out for row in printed)
    (target,) = result["page"]["targets"]  # the broker's batch path, every run
    batch = next(r for r in result["runs"] if r["row"] == BATCH_ROW)
    assert len(batch["msgs_per_s"]) == 1
    assert target["met"] == (min(batch["msgs_per_s"]) >= 300_000)
