"""`longboat bench` against a real name server and broker on loopback, with tiny sizes: every
case moves what it says it moved, reports sane percentiles, and the CLI prints JSON and plots."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import start_cluster
from longboat.bench import loadgen
from longboat.bench.stats import BenchResult, latency_figures
from longboat.cli.main import cli


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory: pytest.TempPathFactory):
    cluster = start_cluster(tmp_path_factory.mktemp("bench"))
    yield cluster.namesrv_addr
    cluster.stop()


def sane(result: BenchResult, *, samples: int) -> None:
    """The figures report what was measured: `samples` latencies, the messages moved, and a
    rate that is those messages over the time taken."""
    figures = result.figures()
    assert len(result.latencies_us) == figures["samples"] == samples
    assert figures["messages"] == result.messages
    # (tps is printed to one decimal)
    assert figures["tps"] == pytest.approx(result.messages / result.seconds, abs=0.05)
    latency = latency_figures(result.latencies_us)
    assert {name: figures[name] for name in latency} == latency
    assert 0 < latency["p50_us"] <= latency["p99_us"] <= latency["p999_us"] <= latency["max_us"]


async def stored(namesrv: str, topic: str) -> int:
    """How many messages the broker holds in `topic` (the sum of its queues' max offsets)."""
    puller = await loadgen.Puller.open(loadgen.LoadOptions(namesrv, topic=topic))
    try:
        queues = await puller.queues()
        return sum([await puller.reader.max_offset(mq) for mq in queues])
    finally:
        await puller.close()


def test_latency_figures_are_nearest_rank() -> None:
    assert latency_figures(range(1, 1001)) == {
        "p50_us": 500.0, "p99_us": 990.0, "p999_us": 999.0, "max_us": 1000.0,
    }  # fmt: skip
    assert latency_figures([]) == {}


async def test_produce_moves_exactly_the_budget_in_batches(namesrv: str) -> None:
    opts = loadgen.LoadOptions(namesrv, concurrency=3, batch=4, messages=50, duration=30)
    result = await loadgen.produce(opts)
    assert result.messages == 50
    # 50 in batches of at most 4 from a shared budget: 13 requests.
    sane(result, samples=13)
    assert await stored(namesrv, str(result.extra["topic"])) == 50


async def test_consume_drains_every_preloaded_message(namesrv: str) -> None:
    opts = loadgen.LoadOptions(namesrv, batch=32, duration=30, queues=2)
    result = await loadgen.consume(opts, preloaded=300)
    assert result.messages == 300
    # Two queues of 150 drained in pulls of up to 32: at least 5 pulls each, one per sample.
    assert len(result.latencies_us) >= 10
    sane(result, samples=len(result.latencies_us))
    # Every queue's offset is committed to its end, the last pull's included.
    opts = loadgen.LoadOptions(
        namesrv, topic=str(result.extra["topic"]), group=str(result.extra["group"])
    )
    puller = await loadgen.Puller.open(opts)
    try:
        queues = await puller.queues()
        committed = [await puller.reader.committed(opts.group, mq) for mq in queues]
    finally:
        await puller.close()
    offsets = [c for c in committed if c is not None]
    assert len(offsets) == 2 and sum(offsets) == 300


async def test_e2e_delivers_every_sent_message(namesrv: str) -> None:
    opts = loadgen.LoadOptions(namesrv, concurrency=2, messages=40, duration=30, queues=2)
    result = await loadgen.e2e(opts)
    assert result.messages == result.extra["sent"] == 40
    sane(result, samples=40)  # one latency per delivery
    assert await stored(namesrv, str(result.extra["topic"])) == 40


async def test_wakeup_times_each_round(namesrv: str) -> None:
    opts = loadgen.LoadOptions(namesrv, duration=30)
    result = await loadgen.wakeup(opts, rounds=20, warmup=2)
    assert result.messages == result.extra["rounds"] == 20
    sane(result, samples=20)
    # Warm-up rounds are sent too, but not counted.
    assert await stored(namesrv, str(result.extra["topic"])) == 22


async def test_holds_parks_and_wakes_every_pull(namesrv: str) -> None:
    opts = loadgen.LoadOptions(namesrv, duration=30)
    result = await loadgen.holds(opts, count=200, window_s=0.3, settle_s=0.3, pid=os.getpid())
    assert result.messages == 200  # one message answered every parked pull
    assert result.extra["parked"] == 200 and result.extra["broker_pid"] == os.getpid()
    assert result.extra["window_s"] == 0.3 and float(result.extra["cpu_pct"]) >= 0
    sane(result, samples=1)  # one send, timed to the last answer


def test_cli_prints_json_and_writes_a_plot(namesrv: str, tmp_path: Path) -> None:
    plot = tmp_path / "lat.png"
    out = CliRunner().invoke(
        cli,
        [
            "bench",
            "produce",
            "--namesrv",
            namesrv,
            "-n",
            "30",
            "-w",
            "2",
            "--json",
            "--plot",
            str(plot),
        ],
    )
    assert out.exit_code == 0, out.output
    figures = json.loads(out.output)
    assert figures["messages"] == 30 and figures["p99_us"] > 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_rejects_a_body_too_small_for_the_timestamp(namesrv: str) -> None:
    out = CliRunner().invoke(cli, ["bench", "produce", "--namesrv", namesrv, "-s", "4"])
    assert out.exit_code != 0
    assert "at least 8 bytes" in out.output
