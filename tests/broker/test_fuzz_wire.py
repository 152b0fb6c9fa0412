"""The wire-level fuzz and abuse suite: a real broker (`longboat up`, its own process) takes
100,000 mutated and random frames on many connections from a hostile peer process
(`fuzz_peer.py`) while a well-behaved client keeps sending and pulling.

It asserts what matters to the well-behaved client: every message it sent arrives intact and
in order, no request of its waits longer than a generous bound (the figures are printed), and
the broker's resident memory stays bounded.  The broker must still be serving at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

from cli.processes import ServerProcess, cli_env
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.headers import CreateTopicRequestHeader

from .wire import Wire, records, sent

FRAMES = 100_000
CONNECTIONS = 16
TOPIC = "FuzzWellBehaved"
# Generous: a request of the well-behaved client may wait this long at most.
LATENCY_BOUND_S = 10.0
# The broker's resident memory may grow this much over the fuzzing.
MEMORY_BOUND_BYTES = 256 * 1024 * 1024
FUZZ_TIMEOUT_S = 240.0


def body_of(i: int) -> bytes:
    payload = b"%08d" % i * 16
    return payload + hashlib.sha256(payload).digest()


async def well_behaved(
    addr: str, fuzzing: asyncio.Future[tuple[bytes, bytes]]
) -> tuple[int, list[float]]:
    """Send and pull until the fuzzer is done; check everything pulled; the latencies."""
    wire = Wire(addr)
    latencies: list[float] = []

    async def timed(call):  # type: ignore[no-untyped-def]
        started = time.monotonic()
        response = await call
        latencies.append(time.monotonic() - started)
        return response

    create = CreateTopicRequestHeader(
        topic=TOPIC, defaultTopic="TBW102", readQueueNums=1, writeQueueNums=1, perm=6
    )
    response = await wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create)
    assert response.code == ResponseCode.SUCCESS, response.remark
    count = pulled = 0
    try:
        while not fuzzing.done() or count < 20:
            sent(await timed(wire.send(TOPIC, body_of(count))))
            count += 1
            if count % 10 == 0:
                response = await timed(wire.pull(TOPIC, 0, pulled, max_nums=32))
                for msg in records(response):
                    assert msg.queue_offset == pulled and msg.body == body_of(pulled)
                    pulled += 1
        while pulled < count:
            response = await timed(wire.pull(TOPIC, 0, pulled, max_nums=32))
            got = records(response)
            assert got, f"message {pulled} of {count} never arrived"
            for msg in got:
                assert msg.queue_offset == pulled and msg.body == body_of(pulled)
                pulled += 1
    finally:
        await wire.close()
    return count, latencies


def test_a_fuzzed_broker_keeps_serving_a_well_behaved_client(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"LONGBOAT_MAPPED_FILE_SIZE_CONSUME_QUEUE": str(20 * 1000)}
    broker = ServerProcess(
        ["up", "--data", str(tmp_path / "store"), "--namesrv-port", "0", "--broker-port", "0",
         "--metrics-port", "0"],
        home,
        extra_env=env,
    )  # fmt: skip
    try:
        served = re.search(r"serving at (127\.0\.0\.1:\d+)", broker.wait_for("Ctrl-C stops"))
        assert served, broker.output
        addr = served.group(1)
        rss = psutil.Process(broker.proc.pid).memory_info
        before = rss().rss

        async def scenario() -> tuple[int, list[float], dict[str, int], float]:
            started = time.monotonic()
            peer = await asyncio.create_subprocess_exec(
                sys.executable, str(Path(__file__).with_name("fuzz_peer.py")), addr,
                "--frames", str(FRAMES), "--connections", str(CONNECTIONS),
                stdout=subprocess.PIPE, env=cli_env(home),
            )  # fmt: skip
            fuzzing = asyncio.ensure_future(peer.communicate())
            try:
                count, latencies = await well_behaved(addr, fuzzing)
                async with asyncio.timeout(FUZZ_TIMEOUT_S):
                    out, _ = await fuzzing
            finally:
                if peer.returncode is None:
                    peer.kill()
                    await peer.wait()
            assert peer.returncode == 0, f"the fuzz peer failed: {out!r}"
            totals = json.loads(out.decode().strip().splitlines()[-1])
            return count, latencies, totals, time.monotonic() - started

        count, latencies, totals, elapsed = asyncio.run(scenario())
        after = rss().rss
        ordered = sorted(latencies)
        print(
            f"\nfuzz: {totals['processed_frames']:,} hostile frames read by the broker on "
            f"{totals['connections']} connections, {totals['killer_frames']} stream-breaking "
            f"frames, in {elapsed:.1f} s; "
            f"well-behaved: {count} messages, {len(latencies)} requests, latency median "
            f"{statistics.median(ordered) * 1000:.1f} ms, p99 "
            f"{ordered[int(len(ordered) * 0.99)] * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms "
            f"(bound {LATENCY_BOUND_S:.0f} s); broker RSS {before / 2**20:.0f} -> "
            f"{after / 2**20:.0f} MiB"
        )
        assert totals["processed_frames"] >= FRAMES
        # Every intact frame was answered or ignored, never a reason to drop the connection;
        # every stream-breaking one closed it.
        assert totals["closed_early"] == 0 and totals["sync_timeouts"] == 0, totals
        assert totals["closed_after_killer"] == totals["killer_frames"], totals
        assert ordered[-1] < LATENCY_BOUND_S
        assert after - before < MEMORY_BOUND_BYTES
        assert broker.proc.poll() is None, "the broker died"
        assert "Traceback" not in broker.output, broker.output[-5000:]
    finally:
        broker.kill()
