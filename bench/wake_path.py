"""Where one wake-up's time goes, hop by hop: producer client, server, consumer client.

    python -m bench.wake_path [--systems longboat,redis] [--rounds 300] [--warmup 20] [--runs 3]

The side-by-side wake-up row again (`bench.peers`, workload `wakeup`), with its roles and its
clients (`bench.peers`' `LongboatClient` and `RedisStreamsClient`), in three processes: the
server, a consumer that parks one blocking read at a time, and a producer that, told the read
is parked, waits 2 ms and sends one 256-byte message.  Longboat's broker and name server run
on uvloop in a child process; Redis is `redis-server` as `bench.peers` starts it.

Each process notes the monotonic time (one clock for every process of the machine) where the
probes below sit, by wrapping the named functions in the process that runs them: nothing in
`longboat` or redis-py is changed for it.  Redis' server is C, so its hops are seen from the
clients only.  A round's hops are the times between consecutive probes; the script prints each
hop's median and p90 over the rounds (per run, then the median of the runs' medians), and the
runs alternate between the systems.  They are wall time on one message's path with every
process waking from idle, so they include what a cold cache costs: what a wake-up takes end to
end, not CPU per request (`bench.send_profile` and `bench.pull_profile` measure that).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import results
from bench.broker_bench import start_servers
from bench.peers.base import Client
from bench.peers.longboat_system import LongboatClient
from bench.peers.redis_streams import RedisStreams, RedisStreamsClient
from longboat.bench.stats import percentile
from longboat.protocol import RequestCode
from longboat.remoting.event_loop import run

SETTLE_S = 0.002  # as bench.peers' wakeup: time the parked read gets to reach the server
STREAM = "WakePath"

# Per system, (probe, process, what happened there), in the order a round passes them.
PROBES = {
    "longboat": (
        ("stamped", "producer", "the producer role stamps the message and calls send"),
        ("send to socket", "producer", "the send request goes to the connection to be written"),
        ("send read", "broker", "the broker's protocol receives the send's bytes"),
        ("send handled", "broker", "the send processor is handed the decoded request"),
        ("arrival", "broker", "the store tells the hold service of the arrival"),
        ("pull answered", "broker", "the parked pull's answer is built (its write comes next)"),
        ("answer read", "consumer", "the consumer's protocol receives the answer's bytes"),
        ("fetch returned", "consumer", "the consumer role has the message"),
    ),
    "redis": (
        ("stamped", "producer", "the producer role stamps the message and calls send"),
        ("send to socket", "producer", "redis-py hands the packed XADD to its connection"),
        ("answer read", "consumer", "the consumer's stream reader receives the reply's bytes"),
        ("fetch returned", "consumer", "the consumer role has the message"),
    ),
}

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


def _probe_reads(system: str, log: Log) -> None:
    """A client's "answer read": where its answers' bytes first reach Python."""
    if system == "longboat":
        from longboat.remoting.connection import RemotingProtocol

        _on_entry(log, RemotingProtocol, "data_received", "answer read")
    else:
        _on_entry(log, asyncio.StreamReader, "feed_data", "answer read")


def _probe_sends(system: str, log: Log) -> None:
    """A producer's "send to socket", on entry: the server may read the request before the
    producer's write call returns."""
    if system == "longboat":
        from longboat.remoting.connection import Connection

        _on_entry(
            log,
            Connection,
            "send",
            "send to socket",
            lambda _conn, cmd: cmd.code == RequestCode.SEND_MESSAGE_V2,
        )
    else:
        from redis.asyncio.connection import AbstractConnection

        _on_entry(log, AbstractConnection, "send_packed_command", "send to socket")


def _client(system: str, endpoint: dict[str, Any]) -> Client:
    return LongboatClient(endpoint) if system == "longboat" else RedisStreamsClient(endpoint)


# ---------------------------------------------------------------------------- the processes


def _broker(ready: Any, stop: Any, logs: Any) -> None:
    from longboat.broker.handlers.pull import HeldPullReader
    from longboat.broker.handlers.send import SendProcessor
    from longboat.broker.state.hold import HoldService
    from longboat.remoting.connection import RemotingProtocol

    log: Log = []
    _on_entry(log, RemotingProtocol, "data_received", "send read")
    _on_entry(log, SendProcessor, "handle", "send handled")
    _on_entry(log, HoldService, "on_arrival", "arrival")
    _on_return(log, HeldPullReader, "__call__", "pull answered")

    async def serve() -> None:
        with tempfile.TemporaryDirectory(prefix="longboat-wake-") as data_dir:
            namesrv, broker = await start_servers(data_dir)
            ready.put({"namesrv": namesrv.addr})
            await asyncio.get_running_loop().run_in_executor(None, stop.wait)
            await broker.stop()
            await namesrv.stop()

    run(serve())
    logs.put(("broker", log))


def _consumer(system: str, endpoint: dict[str, Any], rounds: int, parked: Any, logs: Any) -> None:
    log: Log = []
    _probe_reads(system, log)

    async def consume() -> None:
        client = _client(system, endpoint)
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


def _producer(system: str, endpoint: dict[str, Any], parked: Any, logs: Any) -> None:
    log: Log = []
    _probe_sends(system, log)

    async def produce() -> None:
        client = _client(system, endpoint)
        await client.connect()
        while await asyncio.to_thread(parked.get) is not None:
            await asyncio.sleep(SETTLE_S)
            _note(log, "stamped")
            await client.send(STREAM, b"x" * 256)
        await client.close()

    run(produce())
    logs.put(("producer", log))


# ---------------------------------------------------------------------------- the figures


def hops(
    probes: tuple[tuple[str, str, str], ...], logs: list[Log], warmup: int
) -> dict[str, list[float]]:
    """Per hop (named 'from → to'), its µs in every round after `warmup` where each probe
    was found after the one before it."""
    times: dict[str, list[int]] = {probe: [] for probe, _, _ in probes}
    for log in logs:
        for probe, t in log:
            times[probe].append(t)
    for series in times.values():
        series.sort()
    stamps = times["stamped"]
    out: dict[str, list[float]] = {}
    for k in range(warmup, len(stamps)):
        end = stamps[k + 1] if k + 1 < len(stamps) else None
        at = [stamps[k]]
        for probe, _, _ in probes[1:]:
            series = times[probe]
            i = bisect.bisect_left(series, at[-1])
            if i == len(series) or (end is not None and series[i] >= end):
                break
            at.append(series[i])
        else:
            for (a, _, _), (b, _, _), t0, t1 in zip(probes, probes[1:], at, at[1:], strict=False):
                out.setdefault(f"{a} → {b}", []).append((t1 - t0) / 1000)
            out.setdefault("stamped → fetch returned (the wake-up)", []).append(
                (at[-1] - at[0]) / 1000
            )
    return out


@contextmanager
def _server(system: str, ctx: Any, logs: Any, server_logs: list[Log]) -> Iterator[dict[str, Any]]:
    """The system's server, started; yields the clients' endpoint, and once the block is
    done adds what the server's probes noted to `server_logs`."""
    if system == "longboat":
        ready, stop = ctx.Queue(), ctx.Event()
        broker = ctx.Process(target=_broker, args=(ready, stop, logs))
        broker.start()
        try:
            yield ready.get(timeout=60)
            stop.set()
            # Read before the join: a child exits only once what it queued is in the pipe.
            server_logs.append(logs.get(timeout=60)[1])
        finally:
            stop.set()
            broker.join(30)
        return
    redis = RedisStreams()
    with tempfile.TemporaryDirectory(prefix="redis-wake-") as workdir:
        redis.start(Path(workdir))
        try:
            yield redis.endpoint()
        finally:
            redis.stop()


def one_run(system: str, rounds: int, warmup: int) -> dict[str, list[float]]:
    ctx = multiprocessing.get_context("spawn")
    logs, parked = ctx.Queue(), ctx.Queue()
    got: list[Log] = []
    with _server(system, ctx, logs, got) as endpoint:
        consumer = ctx.Process(
            target=_consumer, args=(system, endpoint, warmup + rounds, parked, logs)
        )
        consumer.start()
        if parked.get(timeout=60) != "ready":
            raise RuntimeError("the consumer did not start")
        producer = ctx.Process(target=_producer, args=(system, endpoint, parked, logs))
        producer.start()
        got += [logs.get(timeout=600)[1] for _ in range(2)]
        for proc in (producer, consumer):
            proc.join(30)
    return hops(PROBES[system], got, warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default="longboat,redis")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    results.add_json_option(parser, "wake_path")
    args = parser.parse_args()
    systems = [s for s in args.systems.split(",") if s]
    for system in systems:
        if system not in PROBES:
            parser.error(f"unknown system {system!r} (known: {', '.join(PROBES)})")
        if system == "redis" and (reason := RedisStreams().missing()) is not None:
            parser.error(f"redis: {reason}")
        print(f"{system} probes:")
        for probe, process, what in PROBES[system]:
            print(f"  {probe:15s} ({process}): {what}")
    medians: dict[str, dict[str, list[float]]] = {s: {} for s in systems}
    for r in range(args.runs):
        for system in systems:
            got = one_run(system, args.rounds, args.warmup)
            matched = len(next(iter(got.values()), []))
            print(f"run {r + 1}/{args.runs}, {system}: {matched} rounds matched")
            for hop, samples in got.items():
                samples.sort()
                p50 = statistics.median(samples)
                medians[system].setdefault(hop, []).append(p50)
                p90 = percentile(samples, 90)
                print(f"  {hop:45s} p50 {p50:8.1f} µs   p90 {p90:8.1f} µs")
    tables = []
    for system in systems:
        title = f"{system}, median of the {args.runs} runs' medians"
        print(f"{title}:")
        rows = []
        for hop, values in medians[system].items():
            print(f"  {hop:45s} {statistics.median(values):8.1f} µs")
            rows.append([hop, f"{statistics.median(values):.1f}"])
        tables.append({"title": title, "columns": ["hop", "µs"], "rows": rows})
    sizes = {k: v for k, v in vars(args).items() if k != "json"}
    result = results.record(
        "wake_path", sizes=sizes, runs=[medians], page={"targets": [], "tables": tables}
    )
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
