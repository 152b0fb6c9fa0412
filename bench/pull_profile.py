"""Where a broker's CPU goes for pulls of 32: the consume path, request by request.

    python -m bench.pull_profile [--messages 25600] [--runs 3] [--top 25]

A name server and a broker run in this process on uvloop (ASYNC_FLUSH, a temporary store);
a 4-queue topic holds `--messages` per queue, stored in batches of 64 (256-byte bodies, one
tag) as a batching producer leaves them.  A child process reads every queue to its end the
way a fan-out to 4 groups does: one connection per group, one pull of 32 in flight per queue
and group (16 at once), each with the commit-offset, suspend and subscription ("*") flags,
built with `longboat.protocol` so the client costs next to nothing.  Printed: the broker's
user and system CPU per pull without a profiler (the kernel's counters, the child's share
excluded), then, for one more pass under cProfile, the functions by own time and the Python
calls per pull.

Each run also sends the same pulls to the *Python floor*: a uvloop protocol in this process
that parses each frame's JSON header with orjson and answers with an orjson header and a
stored body of 32 records, and does nothing else.  The broker's figure over the floor's (same
run) is what its own work costs: the request's checks, the read, the offset commit.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import orjson

from bench import results
from bench.broker_bench import start_servers
from bench.send_profile import cpu_per_request, profile_result
from bench.wire import bare_pull, bare_send
from longboat.protocol.batch import BatchItem, encode_batch
from longboat.protocol.headers import PullMessageRequestHeader
from longboat.remoting import RemotingClient
from longboat.remoting.event_loop import run

TOPIC = "ProfilePull"
QUEUES = 4
GROUPS = 4
PULL = 32
BATCH = 64


async def _pull_everything(addr: str, per_queue: int, run_id: str) -> None:
    """The child's side: every queue read to its end by each group, 32 at a time."""
    clients = [RemotingClient() for _ in range(GROUPS)]

    async def reader(group: int, queue_id: int) -> None:
        offset = 0
        while offset < per_queue:
            request = bare_pull(
                PullMessageRequestHeader.pulling(
                    group=f"profile-{run_id}-{group}", topic=TOPIC, queue_id=queue_id,
                    offset=offset, max_msgs=PULL, suspend_ms=15_000, commit_offset=offset,
                )
            )  # fmt: skip
            response = await clients[group].request(addr, request, 10)
            assert response.code == 0, response.remark
            offset = int(response.ext_fields["nextBeginOffset"])

    await asyncio.gather(*(reader(g, q) for g in range(GROUPS) for q in range(QUEUES)))
    for client in clients:
        await client.close()


async def _run_puller(addr: str, per_queue: int, run_id: str) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.pull_profile", "--puller", addr,
        "--messages", str(per_queue), "--run-id", run_id,
    )  # fmt: skip
    if await child.wait() != 0:
        raise RuntimeError("the pulling process failed")


class _FloorProtocol(asyncio.Protocol):
    """The least a Python server of this protocol does per pull: split the frame, parse its
    JSON header, answer with a header of the pull answer's fields and a body of 32 records."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= 8:
            length, marker = _PREFIX.unpack_from(self.buffer)
            if len(self.buffer) < 4 + length:
                return
            request = orjson.loads(bytes(self.buffer[8 : 8 + (marker & 0xFFFFFF)]))
            del self.buffer[: 4 + length]
            next_begin = str(int(request["extFields"]["queueOffset"]) + PULL)
            header = orjson.dumps(
                {
                    "code": 0,
                    "extFields": {"suggestWhichBrokerId": "0", "nextBeginOffset": next_begin,
                                  "minOffset": "0", "maxOffset": "0"},
                    "flag": 1,
                    "language": "JAVA",
                    "opaque": request["opaque"],
                    "remark": "FOUND",
                    "serializeTypeCurrentRPC": "JSON",
                    "version": request["version"],
                }
            )  # fmt: skip
            prefix = _PREFIX.pack(4 + len(header) + len(self.body), len(header))
            self.transport.writelines((prefix + header, self.body))


_PREFIX = struct.Struct(">iI")


async def _fill(addr: str, per_queue: int) -> bytes:
    """Store `per_queue` messages in every queue, 64 per batch; a pull body of 32 of them."""
    client = RemotingClient()
    body = encode_batch([BatchItem(b"x" * 256, {"TAGS": "TagA"}) for _ in range(BATCH)])
    for queue_id in range(QUEUES):
        request = bare_send(TOPIC, queue_id, body, batch=True)
        for _ in range(per_queue // BATCH):
            response = await client.request(addr, replace(request), 10)
            assert response.code == 0, response.remark
    fill = PullMessageRequestHeader.pulling(
        group="profile-fill", topic=TOPIC, queue_id=0, offset=0, max_msgs=PULL
    )
    pulled = await client.request(addr, bare_pull(fill), 10)
    await client.close()
    return pulled.body


async def profile(per_queue: int, runs: int, top: int, json_path: Path | None) -> None:
    per_queue -= per_queue % BATCH
    pulls = GROUPS * QUEUES * per_queue // PULL
    with tempfile.TemporaryDirectory(prefix="pull-profile-") as data:
        namesrv, broker = await start_servers(data)
        addr = broker.broker_addr
        loop = asyncio.get_running_loop()
        try:
            body = await _fill(addr, per_queue)
            floor = await loop.create_server(lambda: _FloorProtocol(body), "127.0.0.1", 0)
            floor_addr = f"127.0.0.1:{floor.sockets[0].getsockname()[1]}"
            await _run_puller(addr, per_queue, "warm")
            rows = []
            for i in range(runs):
                floor_cpu = await cpu_per_request(
                    partial(_run_puller, floor_addr, per_queue, f"floor{i}"), pulls
                )
                t0 = time.perf_counter()
                broker_cpu = await cpu_per_request(
                    partial(_run_puller, addr, per_queue, f"run{i}"), pulls
                )
                rows.append((pulls * PULL / (time.perf_counter() - t0), *broker_cpu, *floor_cpu))
            floor.close()
            profiler = cProfile.Profile()
            profiler.enable()
            await _run_puller(addr, per_queue, "profiled")
            profiler.disable()
        finally:
            await broker.stop()
            await namesrv.stop()
    print(f"{pulls} pulls of {PULL} ({GROUPS} groups x {QUEUES} queues), {runs} run(s), medians:")
    rate, user, system, floor_user, floor_system = (
        statistics.median(column) for column in zip(*rows, strict=True)
    )
    ratios = [(b_u + b_s) / max(f_u + f_s, 1e-9) for _, b_u, b_s, f_u, f_s in rows]
    print(f"broker: {rate:,.0f} msgs/s")
    print(f"broker CPU per pull: {user:.1f} us user + {system:.1f} us system")
    print(f"Python floor CPU per request: {floor_user:.1f} us user + {floor_system:.1f} us system")
    print(f"broker / floor, CPU per request (runs' median): {statistics.median(ratios):.2f}x")
    sizes = {"messages_per_queue": per_queue, "pull": PULL, "groups": GROUPS, "queues": QUEUES}
    result = profile_result("pull_profile", "pull", "msgs", sizes, rows)
    print(f"result: {results.save(result, json_path)}")
    stats = pstats.Stats(profiler)
    print(f"\nunder cProfile: {stats.total_calls / pulls:.0f} Python calls per pull")  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=25_600, help="per queue")
    parser.add_argument("--runs", type=int, default=3, help="interleaved floor/broker runs")
    parser.add_argument("--top", type=int, default=25, help="functions listed by own time")
    parser.add_argument("--puller", help=argparse.SUPPRESS)
    parser.add_argument("--run-id", help=argparse.SUPPRESS)
    results.add_json_option(parser, "pull_profile")
    args = parser.parse_args()
    if args.puller:
        run(_pull_everything(args.puller, args.messages, args.run_id))
    else:
        run(profile(args.messages, args.runs, args.top, args.json))


if __name__ == "__main__":
    main()
