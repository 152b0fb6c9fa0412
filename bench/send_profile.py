"""Where a broker's CPU goes for one message sent at a time: the per-request path.

    python -m bench.send_profile [--sends 5000] [--top 25]

A name server and a broker run in this process on uvloop (ASYNC_FLUSH, a temporary store);
a child process sends `--sends` SEND_MESSAGE_V2 requests (256-byte body, one tag) one at a
time over one connection, each awaited, built once with `longboat.protocol` so the client
costs next to nothing.  Printed: the broker's user and system CPU per send without a profiler
(from the kernel's counters, the child's own share excluded), then, for a second run of the
same sends under cProfile, the functions by own time and the Python calls per send.

The first figure is the one to compare with other servers (Redis' per-command CPU, say); the
profile says where it goes (its absolute times are inflated by the profiler's own cost).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
import time
from dataclasses import replace

from bench.broker_bench import bare_send, start_servers

from longboat.bench.usage import sample
from longboat.cli.runtime import run
from longboat.remoting import RemotingClient

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


async def profile(sends: int, top: int) -> None:
    with tempfile.TemporaryDirectory(prefix="send-profile-") as data:
        namesrv, broker = await start_servers(data)
        try:
            await _run_sender(broker.broker_addr, 500)  # topic creation, warm caches
            before, t0 = os.times(), time.perf_counter()
            await _run_sender(broker.broker_addr, sends)
            after, seconds = os.times(), time.perf_counter() - t0
            user = (after.user - before.user) / sends * 1e6
            system = (after.system - before.system) / sends * 1e6
            print(f"{sends} sends one at a time: {sends / seconds:,.0f} sends/s")
            print(f"broker CPU per send: {user:.1f} us user + {system:.1f} us system")
            print(f"broker RSS: {sample(os.getpid()).rss / 2**20:.1f} MiB")
            profiler = cProfile.Profile()
            profiler.enable()
            await _run_sender(broker.broker_addr, sends)
            profiler.disable()
        finally:
            await broker.stop()
            await namesrv.stop()
    stats = pstats.Stats(profiler)
    print(f"\nunder cProfile: {stats.total_calls / sends:.0f} Python calls per send")  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=5000)
    parser.add_argument("--top", type=int, default=25, help="functions listed by own time")
    parser.add_argument("--sender", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sender:
        run(_send_one_at_a_time(args.sender, args.sends))
    else:
        run(profile(args.sends, args.top))


if __name__ == "__main__":
    main()
