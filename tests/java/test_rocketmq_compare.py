"""The side-by-side harness (bench/rocketmq_compare.py) runs end to end with tiny sizes.

It starts Apache RocketMQ and Longboat itself and drives both with the Java `Bench` peer; this
checks the harness (every row measured for both systems, figures in their plausible ranges, a
ratio and a verdict per row), not the speed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import rocketmq_compare  # noqa: E402

pytestmark = pytest.mark.java


def test_harness_measures_every_row_for_both_systems(java_peers: None) -> None:
    sizes = rocketmq_compare.parse(
        ["--runs", "1", "--single", "50", "--batches", "5", "--drain", "640", "--rounds", "10",
         "--parked", "200", "--timeout", "180"]
    )  # fmt: skip
    result = rocketmq_compare.compare(sizes, log=lambda line: None)

    (run,) = result["runs"]
    for system in rocketmq_compare.SYSTEMS:
        figures = run[system]
        assert set(figures) == {key for key, *_ in rocketmq_compare.ROWS}
        # An idle broker's CPU may round to 0; nothing is negative but RSS growth (a JVM's
        # RSS may shrink a little).  The consumed-message and fan-out delivery CPU are derived
        # and may not be measurable (None) at tiny sizes.
        measured = {k: v for k, v in figures.items() if v is not None}
        assert set(figures) - set(measured) <= {"cpu_consume", "cpu_fanout"}, figures
        assert figures["client_cpu_fanout"] > 0  # the Java client's own CPU, it reports
        assert all(math.isfinite(v) for v in measured.values()), figures
        assert all(v >= 0 for k, v in measured.items() if k != "parked_rss"), figures
        assert all(figures[k] > 0 for k in ("single", "batch", "syncflush", "drain", "fanout"))
        assert figures["wakeup_p50"] <= figures["wakeup_p99"] <= figures["wakeup_p999"]
        assert 1 < figures["idle_rss"] < 4096  # MiB
        assert figures["cold_start"] < 120_000  # ms
    for key, _label, _unit, target in rocketmq_compare.ROWS:
        row = result["summary"][key]
        ours, theirs = run["longboat"][key], run["rocketmq"][key]
        if ours is None or theirs is None or key in rocketmq_compare.NO_RATIO:
            assert row["ratio"] is None and row["met"] is None
            continue
        assert row["ratio"] == pytest.approx(ours / max(theirs, 0.01))
        assert (row["met"] is None) == (target is None)
    assert "ASYNC_FLUSH" in result["settings"]["rocketmq"]
    assert "-Xmx512m" in result["settings"]["rocketmq"]
    rocketmq_compare.report(result)  # the table prints
