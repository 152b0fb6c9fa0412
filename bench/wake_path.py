"""Where one wake-up's time goes, hop by hop: producer client, broker, consumer client.

    python -m bench.wake_path [--rounds 300] [--warmup 20] [--runs 3]

The side-by-side wake-up row again (`bench.peers`, workload `wakeup`), with its roles and its
client code (`bench.peers.longboat_system.LongboatClient`), in three processes: a broker (and
name server) on uvloop, a consumer that parks one blocking read at a time, and a producer
that, told the read is parked, waits 2 ms and sends one stamped 256-byte message.

Each process notes the monotonic time (one clock for every process of the machine) where the
probes below sit, by wrapping the named functions in the process that runs them: nothing in
`longboat` is changed for it.  A round's hops are the times between consecutive probes; the
script prints each hop's median and p90 over the rounds (per run, then the median of the
runs' medians).  They are wall time on one message's path with every process waking from
idle, so they include what a cold cache costs: what a wake-up takes end to end, not CPU per
request (`bench.send_profile` and `bench.pull_profile` measure that).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench.broker_bench import start_servers
from bench.peers.longboat_system import LongboatClient

from longboat.cli.runtime import run
from longboat.protocol import RequestCode

SETTLE_S = 0.002  # as bench.peers' wakeup: time the parked read gets to reach the broker
STREAM = "WakePath"

# (probe, process, what happened there), in the order a round passes them.
PROBES = (
    ("stamped", "producer", "the producer role stamps the message and calls send"),
    ("send to socket", "producer", "the send request goes to the connection to be written"),
    ("send read", "broker", "the broker's protocol receives the send's bytes"),
    ("send handled", "broker", "the send processor is handed the decoded request"),
    ("arrival", "broker", "the store tells the hold service of the arrival"),
    ("pull answered", "broker", "the parked pull's answer is built (its write comes next)"),
    ("answer read", "consumer", "the consumer's protocol receives the answer's bytes"),
    ("fetch returned", "consumer", "the consumer role has the message"),
)

Log = list[tuple[str, int]]


def _note(log: Log, probe: str) -> None:
    log.append((probe, time.monotonic_ns()))


def _on_entry(
    log: Log, owner: Any, name: str, probe: str, when: Callable[..., bool] = lambda *a: True
) -> None:
    original = getattr(owner, name)

    def probed(*args: Any, **kwargs: Any) -> Any:
        if when(*args):
            _note(log, probe)
        return original(*args, **kwargs)

    setattr(owner, name, probed)


def _on_return(log: Log, owner: Any, name: str, probe: str) -> None:
    original = getattr(owner, name)

    def probed(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        _note(log, probe)
        return result

    setattr(owner, name, probed)


# ---------------------------------------------------------------------------- the processes


def _broker(ready: Any, stop: Any, logs: Any) -> None:
    from longboat.broker.hold import HoldService
    from longboat.broker.pull import HeldPullReader
    from longboat.broker.send import SendProcessor
    from longboat.remoting.connection import RemotingProtocol

    log: Log = []
    _on_entry(log, RemotingProtocol, "data_received", "send read")
    _on_entry(log, SendProcessor, "handle", "send handled")
    _on_entry(log, HoldService, "on_arrival", "arrival")
    _on_return(log, HeldPullReader, "__call__", "pull answered")

    async def serve() -> None:
        with tempfile.TemporaryDirectory(prefix="longboat-wake-") as data_dir:
            namesrv, broker = await start_servers(data_dir)
            ready.put(namesrv.addr)
            await asyncio.get_running_loop().run_in_executor(None, stop.wait)
            await broker.stop()
            await namesrv.stop()

    run(serve())
    logs.put(("broker", log))


def _consumer(namesrv: str, rounds: int, parked: Any, logs: Any) -> None:
    from longboat.remoting.connection import RemotingProtocol

    log: Log = []
    _on_entry(log, RemotingProtocol, "data_received", "answer read")

    async def consume() -> None:
        client = LongboatClient({"namesrv": namesrv})
        await client.connect()
        await client.create_stream(STREAM, ["g"])
        parked.put("ready")
        for i in range(rounds):
            task = asyncio.create_task(client.fetch(STREAM, "g", "c", 1, 10.0))
            for _ in range(3):  # let the request reach the socket, as bench.peers does
                await asyncio.sleep(0)
            parked.put(i)
            fetched = await task
            _note(log, "fetch returned")
            assert fetched.bodies, "a parked read returned empty"
            await client.ack(STREAM, "g", fetched)
        parked.put(None)
        await client.close()

    run(consume())
    logs.put(("consumer", log))


def _producer(namesrv: str, parked: Any, logs: Any) -> None:
    from longboat.remoting.connection import Connection

    log: Log = []
    # On entry: the broker may read the request before the producer's write call returns.
    _on_entry(
        log,
        Connection,
        "send",
        "send to socket",
        lambda _conn, cmd: cmd.code == RequestCode.SEND_MESSAGE_V2,
    )

    async def produce() -> None:
        client = LongboatClient({"namesrv": namesrv})
        await client.connect()
        while await asyncio.to_thread(parked.get) is not None:
            await asyncio.sleep(SETTLE_S)
            _note(log, "stamped")
            await client.send(STREAM, b"x" * 256)
        await client.close()

    run(produce())
    logs.put(("producer", log))


# ---------------------------------------------------------------------------- the figures


def hops(logs: dict[str, Log], warmup: int) -> dict[str, list[float]]:
    """Per hop (named 'from → to'), its µs in every round after `warmup` where each probe
    was found after the one before it."""
    times: dict[str, list[int]] = {probe: [] for probe, _, _ in PROBES}
    for log in logs.values():
        for probe, t in log:
            times[probe].append(t)
    for series in times.values():
        series.sort()
    stamps = times["stamped"]
    out: dict[str, list[float]] = {}
    for k in range(warmup, len(stamps)):
        end = stamps[k + 1] if k + 1 < len(stamps) else None
        at = [stamps[k]]
        for probe, _, _ in PROBES[1:]:
            series = times[probe]
            i = bisect.bisect_left(series, at[-1])
            if i == len(series) or (end is not None and series[i] >= end):
                break
            at.append(series[i])
        else:
            for (a, _, _), (b, _, _), t0, t1 in zip(PROBES, PROBES[1:], at, at[1:], strict=False):
                out.setdefault(f"{a} → {b}", []).append((t1 - t0) / 1000)
            out.setdefault("stamped → fetch returned (the wake-up)", []).append(
                (at[-1] - at[0]) / 1000
            )
    return out


def one_run(rounds: int, warmup: int) -> dict[str, list[float]]:
    ctx = multiprocessing.get_context("spawn")
    ready, stop, logs, parked = ctx.Queue(), ctx.Event(), ctx.Queue(), ctx.Queue()
    broker = ctx.Process(target=_broker, args=(ready, stop, logs))
    broker.start()
    namesrv = ready.get(timeout=60)
    consumer = ctx.Process(target=_consumer, args=(namesrv, warmup + rounds, parked, logs))
    consumer.start()
    if parked.get(timeout=60) != "ready":
        raise RuntimeError("the consumer did not start")
    producer = ctx.Process(target=_producer, args=(namesrv, parked, logs))
    producer.start()
    got = dict(logs.get(timeout=600) for _ in range(2))
    stop.set()
    got.update([logs.get(timeout=60)])
    for proc in (producer, consumer, broker):
        proc.join(30)
    return hops(got, warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for probe, process, what in PROBES:
        print(f"  {probe:15s} ({process}): {what}")
    medians: dict[str, list[float]] = {}
    for r in range(args.runs):
        got = one_run(args.rounds, args.warmup)
        print(f"run {r + 1}/{args.runs}: {len(next(iter(got.values()), []))} rounds matched")
        for hop, samples in got.items():
            samples.sort()
            medians.setdefault(hop, []).append(statistics.median(samples))
            p90 = samples[int(len(samples) * 0.9)]
            print(f"  {hop:45s} p50 {statistics.median(samples):8.1f} µs   p90 {p90:8.1f} µs")
    print(f"median of the {args.runs} runs' medians:")
    for hop, values in medians.items():
        print(f"  {hop:45s} {statistics.median(values):8.1f} µs")


if __name__ == "__main__":
    main()
