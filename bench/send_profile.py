"""Where a broker's CPU goes for one message sent at a time: the per-request path.

    python -m bench.send_profile [--sends 5000] [--runs 3] [--top 25]

A name server and a broker run in this process on uvloop (ASYNC_FLUSH, a temporary store);
a child process sends `--sends` SEND_MESSAGE_V2 requests (256-byte body, one tag) one at a
time over one connection, each awaited, built once with `longboat.protocol` so the client
costs next to nothing.  Printed: the broker's user and system CPU per send without a profiler
(from the kernel's counters, the child's own share excluded), then, for a second run of the
same sends under cProfile, the functions by own time and the Python calls per send.  The
runs' figures go to `bench/results/send_profile.json` (`--json` elsewhere).

Each run also sends the same requests to the *Python floor*: a uvloop protocol in this
process that parses each frame's JSON header with orjson and answers with a small header
built by orjson, and does nothing else.  No Python server of this protocol can spend less per
request; the broker's figure over the floor's (same run) is what the broker's own work costs.

The first figure is the one to compare with other servers (Redis' per-command CPU, say); the
profile says where it goes (its absolute times are inflated by the profiler's own cost).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from bench import results
from bench.broker_bench import start_servers
from bench.wire import bare_send
from longboat.bench.usage import sample
from longboat.remoting import RemotingClient
from longboat.remoting.event_loop import run

BODY = b"x" * 256


async def _send_one_at_a_time(broker: str, sends: int) -> None:
    """The child's side: warm up, then `sends` sends, each awaited."""
    client = RemotingClient()
    request = bare_send("ProfileSingle", 0, BODY, batch=False)
    for _ in range(sends):
        response = await client.request(broker, replace(request), 10)
        assert response.code == 0, response.remark
    await client.close()


async def _run_sender(broker: str, sends: int) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.send_profile", "--sender", broker, "--sends", str(sends)
    )
    if await child.wait() != 0:
        raise RuntimeError("the sending process failed")


class _FloorProtocol(asyncio.Protocol):
    """The least a Python server of this protocol does per request: split the frame, parse
    its JSON header, answer with a header of the send answer's fields.  (Whole frames per read
    are assumed: the sender awaits each answer.)"""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        _, marker = _PREFIX.unpack_from(data)
        request = orjson.loads(data[8 : 8 + (marker & 0xFFFFFF)])
        header = orjson.dumps(
            {
                "code": 0,
                "extFields": {"msgId": "7F00000100002A9F0000000000000000", "queueId": "0",
                              "queueOffset": "0", "MSG_REGION": "DefaultRegion",
                              "TRACE_ON": "true"},
                "flag": 1,
                "language": "JAVA",
                "opaque": request["opaque"],
                "serializeTypeCurrentRPC": "JSON",
                "version": request["version"],
            }
        )  # fmt: skip
        self.transport.write(_PREFIX.pack(4 + len(header), len(header)) + header)


_PREFIX = struct.Struct(">iI")


async def cpu_per_request(
    send: Callable[[], Awaitable[None]], requests: int
) -> tuple[float, float]:
    """(user µs, system µs) this process spends per request while `send()` runs (a child
    process's own CPU is not this process's)."""
    before = os.times()
    await send()
    after = os.times()
    return (
        (after.user - before.user) / requests * 1e6,
        (after.system - before.system) / requests * 1e6,
    )


# The single-send target: the broker's CPU per send at most this many times the floor's.
FLOOR_TARGET = 2.0


def profile_result(
    benchmark: str,
    kind: str,
    rate_unit: str,
    sizes: dict[str, Any],
    rows: Sequence[tuple[float, ...]],
    targets: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The result document of a request profile's runs: rows of (`rate_unit`/s, broker user,
    system µs, floor user, system µs) per `kind` of request, as this module and
    `bench.pull_profile` measure them."""
    figures = (f"{rate_unit}_per_s", "broker_user_us", "broker_system_us", "floor_user_us",
               "floor_system_us")  # fmt: skip
    ratios = [floor_ratio(r) for r in rows]
    table = [
        [f"{i + 1}", f"{r[0]:,.0f}", f"{r[1] + r[2]:.1f}", f"{r[3] + r[4]:.1f}", f"{q:.2f}x"]
        for i, (r, q) in enumerate(zip(rows, ratios, strict=True))
    ]
    columns = ["run", f"{rate_unit}/s", f"broker CPU µs/{kind}", "floor CPU µs/request",
               "broker ÷ floor"]  # fmt: skip
    return results.record(
        benchmark,
        sizes=sizes,
        runs=[dict(zip(figures, row, strict=True)) for row in rows],
        summary={"broker_over_floor": statistics.median(ratios)},
        page={
            "targets": list(targets),
            "tables": [{"title": "per run", "columns": columns, "rows": table}],
        },
    )


def floor_ratio(row: Sequence[float]) -> float:
    """The broker's CPU per request over the floor's, in one run's row."""
    return (row[1] + row[2]) / max(row[3] + row[4], 1e-9)


def record(sends: int, rows: Sequence[tuple[float, ...]]) -> dict[str, Any]:
    """This profile's result, with the single-send target held against the runs' median."""
    ratio = statistics.median(floor_ratio(r) for r in rows)
    target = {
        "figure": "single-send broker CPU ÷ the Python floor's (same run)",
        "target": f"<= {FLOOR_TARGET}x",
        "value": f"{ratio:.2f}x",
        "met": ratio <= FLOOR_TARGET,
    }
    sizes = {"sends": sends, "runs": len(rows), "body_bytes": len(BODY)}
    return profile_result("send_profile", "send", "sends", sizes, rows, [target])


async def profile(sends: int, runs: int, top: int, json_path: Path | None) -> None:
    loop = asyncio.get_running_loop()
    floor = await loop.create_server(_FloorProtocol, "127.0.0.1", 0)
    floor_addr = f"127.0.0.1:{floor.sockets[0].getsockname()[1]}"
    with tempfile.TemporaryDirectory(prefix="send-profile-") as data:
        namesrv, broker = await start_servers(data)
        addr = broker.broker_addr
        try:
            await _run_sender(addr, 500)  # topic creation, warm caches
            rows = []
            for _ in range(runs):
                floor_cpu = await cpu_per_request(lambda: _run_sender(floor_addr, sends), sends)
                t0 = time.perf_counter()
                broker_cpu = await cpu_per_request(lambda: _run_sender(addr, sends), sends)
                rows.append((sends / (time.perf_counter() - t0), *broker_cpu, *floor_cpu))
            print(f"{sends} sends one at a time, {runs} run(s), medians:")
            rate, user, system, floor_user, floor_system = (
                statistics.median(column) for column in zip(*rows, strict=True)
            )
            ratios = [
                (b_user + b_sys) / max(f_user + f_sys, 1e-9)
                for _, b_user, b_sys, f_user, f_sys in rows
            ]
            print(f"broker: {rate:,.0f} sends/s")
            print(f"broker CPU per send: {user:.1f} us user + {system:.1f} us system")
            floor_text = f"{floor_user:.1f} us user + {floor_system:.1f} us system"
            print(f"Python floor CPU per request: {floor_text}")
            print(
                f"broker / floor, CPU per request (runs' median): {statistics.median(ratios):.2f}x"
            )
            print(f"broker RSS: {sample(os.getpid()).rss / 2**20:.1f} MiB")
            print(f"result: {results.save(record(sends, rows), json_path)}")
            profiler = cProfile.Profile()
            profiler.enable()
            await _run_sender(addr, sends)
            profiler.disable()
        finally:
            await broker.stop()
            await namesrv.stop()
            floor.close()
    stats = pstats.Stats(profiler)
    print(f"\nunder cProfile: {stats.total_calls / sends:.0f} Python calls per send")  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3, help="interleaved floor/broker runs")
    parser.add_argument("--top", type=int, default=25, help="functions listed by own time")
    parser.add_argument("--sender", help=argparse.SUPPRESS)
    results.add_json_option(parser, "send_profile")
    args = parser.parse_args()
    if args.sender:
        run(_send_one_at_a_time(args.sender, args.sends))
    else:
        run(profile(args.sends, args.runs, args.top, args.json))


if __name__ == "__main__":
    main()
