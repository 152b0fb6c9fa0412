"""What the blocking client costs over the async one: the hand-off per call, and a send.

    python -m bench.blocking_client [--runs 5] [--calls 20000] [--sends 3000]

Every `longboat.client.sync` call hands a coroutine to the loop thread (`LoopThread.run`) and
waits for it.  Printed, medians of `--runs`:

* the hand-off alone: `LoopThread.run` of a coroutine that returns at once, CPU and wall time
  per call, beside `asyncio.run_coroutine_threadsafe(...).result()` on the same loop thread in
  the same run (what `run` was built on before, and what `submit` still returns);
* one message sent at a time (256-byte body, each awaited) against a name server and broker in a
  child process: this process's CPU per send through the blocking producer and through the
  async producer on uvloop, the same broker, alternating in each run.

Only this process's CPU is counted (the broker's runs in the child), so the ratios are what the
blocking API adds on the caller's side.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import time
from collections.abc import Callable

from bench import results
from bench.broker_bench import servers_in_child
from longboat.client import Message, sync
from longboat.client.producer import Producer
from longboat.remoting.event_loop import run

TOPIC = "BlockingBench"
BODY = b"x" * 256
WARMUP = 300


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _per_call(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per call of `fn`, after a warm-up."""
    for _ in range(WARMUP):
        fn()
    cpu0, wall0 = _cpu(), time.perf_counter()
    for _ in range(calls):
        fn()
    return (_cpu() - cpu0) / calls * 1e6, (time.perf_counter() - wall0) / calls * 1e6


async def _returns() -> int:
    return 1


def hand_off(loop_thread: sync.LoopThread, calls: int) -> dict[str, tuple[float, float]]:
    loop = loop_thread.loop
    return {
        "LoopThread.run": _per_call(lambda: loop_thread.run(_returns()), calls),
        "run_coroutine_threadsafe": _per_call(
            lambda: asyncio.run_coroutine_threadsafe(_returns(), loop).result(), calls
        ),
    }


def blocking_sends(namesrv: str, sends: int) -> float:
    with sync.Producer("bench-blocking", namesrv_addrs=namesrv) as producer:
        return _per_call(lambda: producer.send(Message(TOPIC, BODY)), sends)[0]


async def _async_sends(namesrv: str, sends: int) -> float:
    async with Producer("bench-async", namesrv_addrs=namesrv) as producer:
        for _ in range(WARMUP):
            await producer.send(Message(TOPIC, BODY))
        cpu0 = _cpu()
        for _ in range(sends):
            await producer.send(Message(TOPIC, BODY))
        return (_cpu() - cpu0) / sends * 1e6


def async_sends(namesrv: str, sends: int) -> float:
    return run(_async_sends(namesrv, sends))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20_000, help="hand-offs per run")
    parser.add_argument("--sends", type=int, default=3_000, help="sends per run and API")
    results.add_json_option(parser, "blocking_client")
    args = parser.parse_args()

    runs: list[dict[str, float]] = []
    loop_thread = sync.LoopThread(name="bench-loop-thread")
    try:
        with servers_in_child() as servers:
            with sync.Admin(namesrv_addrs=servers.namesrv) as admin:
                admin.create_topic(TOPIC, queue_nums=1)
            for i in range(args.runs):
                handed = hand_off(loop_thread, args.calls)
                run = {f"{name} {kind}": figures[j] for name, figures in handed.items()
                       for j, kind in enumerate(("cpu", "wall"))}  # fmt: skip
                run["blocking send cpu"] = blocking_sends(servers.namesrv, args.sends)
                run["async send cpu"] = async_sends(servers.namesrv, args.sends)
                runs.append(run)
                print(
                    f"run {i + 1}/{args.runs}: " + ", ".join(f"{k} {v:.1f}" for k, v in run.items())
                )
    finally:
        loop_thread.stop()

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    def ratio(a: str, b: str) -> float:
        return statistics.median(r[a] / r[b] for r in runs)

    lines = [
        *(
            f"hand-off, {name}: {median(name + ' cpu'):.1f} / {median(name + ' wall'):.1f}"
            for name in ("LoopThread.run", "run_coroutine_threadsafe")
        ),
        "LoopThread.run / run_coroutine_threadsafe, CPU (runs' median): "
        f"{ratio('LoopThread.run cpu', 'run_coroutine_threadsafe cpu'):.2f}x",
        f"one send at a time, blocking producer: {median('blocking send cpu'):.1f} CPU",
        f"one send at a time, async producer: {median('async send cpu'):.1f} CPU",
        "blocking / async, CPU per send (runs' median): "
        f"{ratio('blocking send cpu', 'async send cpu'):.2f}x",
    ]
    title = f"medians of {args.runs} runs, µs per call (CPU / wall)"
    print(f"\n{title}:")
    for line in lines:
        print(f"  {line}")
    page = {"targets": [], "tables": [{"title": title, "columns": ["figure"],
                                       "rows": [[line] for line in lines]}]}  # fmt: skip
    sizes = {k: v for k, v in vars(args).items() if k != "json"}
    result = results.record("blocking_client", sizes=sizes, runs=runs, page=page)
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
