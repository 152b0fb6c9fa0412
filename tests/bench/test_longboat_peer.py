"""Longboat as the third system of the peer harness: every workload against a real `longboat up`
child process, tiny sizes, sane figures and matching counts (no assertion about speed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.peers.runner import run_bench  # noqa: E402
from bench.peers.workloads import WORKLOADS, Sizes  # noqa: E402

TINY = Sizes(
    rounds=20,
    warmup=2,
    produce_messages=500,
    produce_batch=16,
    fanout_messages=200,
    fanout_groups=4,
    parked=50,
    idle_window_s=0.5,
    time_limit_s=60.0,
)


@pytest.mark.timeout(300)
def test_every_workload_runs_against_longboat() -> None:
    doc = run_bench(["longboat"], list(WORKLOADS), TINY, runs=1, log=lambda _s: None)
    assert doc["errors"] == [], doc["errors"]
    info = doc["systems"]["longboat"]
    assert "skipped" not in info and info["version"].startswith("longboat")
    res = {w: runs[0] for w, runs in doc["results"]["longboat"].items()}

    wk = res["wakeup"]
    assert wk["rounds"] == TINY.rounds and wk["sent"] == TINY.rounds + TINY.warmup
    assert 0 < wk["p50_us"] <= wk["p99_us"] <= wk["p999_us"] <= wk["max_us"]
    assert res["produce_batch"]["messages"] == TINY.produce_messages
    fo = res["consume_fanout"]
    # Every group reads every message exactly once, byte counts aside.
    assert fo["messages_per_group"] == [TINY.fanout_messages] * TINY.fanout_groups
    pk = res["parked"]
    assert pk["parked"] == TINY.parked and pk["returned_early"] == 0
