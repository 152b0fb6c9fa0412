"""The peer benchmark harness runs end to end against the real Redis and NATS binaries.

Tiny sizes only, and no assertion about speed: the point is that each workload comes back with
sane figures (positive numbers, message counts that match) and that servers start and stop.
Skipped, with the reason, when a binary is not installed (``python -m bench.peers --install``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.peers.registry import load_system  # noqa: E402
from bench.peers.runner import run_bench  # noqa: E402
from bench.peers.stats import percentile, ratios  # noqa: E402
from bench.peers.workloads import WORKLOADS, Sizes  # noqa: E402

TINY = Sizes(
    rounds=20,
    warmup=2,
    produce_messages=500,
    produce_batch=16,
    fanout_messages=200,
    fanout_groups=4,
    parked=20,
    idle_window_s=0.5,
    time_limit_s=60.0,
)


def _missing(name: str) -> str | None:
    return load_system(name).missing()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["redis", "nats", "longboat"])
def test_workloads_return_sane_figures(name: str) -> None:
    reason = _missing(name)
    if reason:
        pytest.skip(f"{name}: {reason}")
    doc = run_bench([name], list(WORKLOADS), TINY, runs=1, log=lambda _s: None)
    assert doc["errors"] == [], doc["errors"]
    info = doc["systems"][name]
    assert "skipped" not in info and info["version"] and info["settings"]
    res = {w: runs[0] for w, runs in doc["results"][name].items()}

    wk = res["wakeup"]
    assert wk["rounds"] == TINY.rounds
    assert wk["sent"] == TINY.rounds + TINY.warmup
    assert 0 < wk["p50_us"] <= wk["p99_us"] <= wk["p999_us"] <= wk["max_us"]

    pb = res["produce_batch"]
    assert pb["messages"] == TINY.produce_messages and pb["msgs_per_s"] > 0

    fo = res["consume_fanout"]
    assert fo["messages_per_group"] == [TINY.fanout_messages] * TINY.fanout_groups
    assert fo["aggregate_msgs_per_s"] > 0 and all(r > 0 for r in fo["per_group_msgs_per_s"])

    pk = res["parked"]
    assert pk["parked"] == TINY.parked and pk["returned_early"] == 0
    assert pk["cpu_pct"] >= 0 and pk["window_s"] > 0

    assert set(doc["medians"][name]) == set(WORKLOADS)


def test_unknown_adapter_is_skipped_not_fatal() -> None:
    doc = run_bench(["longboat"], ["wakeup"], TINY, runs=1, log=lambda _s: None)
    info = doc["systems"]["longboat"]
    if "skipped" not in info:
        pytest.skip("longboat adapter present; covered by its own tests")
    assert doc["errors"] == []


def test_percentile_and_ratio_helpers() -> None:
    values = sorted(float(v) for v in range(1, 1001))
    assert percentile(values, 50) == 500.0
    assert percentile(values, 99.9) == 999.0
    assert percentile(values, 100) == 1000.0
    medians = {
        "cand": {"wakeup": {"p50_us": 100.0}, "produce_batch": {"msgs_per_s": 2000.0}},
        "peer": {"wakeup": {"p50_us": 200.0}, "produce_batch": {"msgs_per_s": 1000.0}},
    }
    r = ratios(medians, "cand")["peer"]
    assert r["wakeup"]["p50_us"]["factor"] == pytest.approx(2.0)
    assert r["produce_batch"]["msgs_per_s"]["factor"] == pytest.approx(2.0)
    assert r["wakeup"]["p50_us"]["better"] is True
