"""`python -m bench.trace_cost` runs and records its figures (tiny sizes; no assertion about
speed: the point is that the committed command still works and says what it measured)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_trace_cost_records_both_cases_and_their_targets(tmp_path: Path) -> None:
    out = tmp_path / "trace_cost.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.trace_cost", "--messages", "40", "--runs", "1",
         "--in-flight", "1,4", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert set(result["summary"]) == {"in_flight_1", "in_flight_4"}
    (table,) = result["page"]["tables"]
    assert [row[0] for row in table["rows"]] == ["1", "4"]
    assert [t["target"] for t in result["page"]["targets"]] == [">= 0.95x untraced"] * 2
    for case in result["summary"].values():
        assert case["plain_msgs_per_s"] > 0 and case["traced_msgs_per_s"] > 0
