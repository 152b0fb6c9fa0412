"""Broker benchmark: produce (one at a time and batched), consume, long-poll wake-up latency,
a send's latency beside 1,000 parked pulls, and the idle cost of parked pulls, over the wire
against a broker in another process.

    python -m bench.broker_bench [--runs 3] [--rounds 1000] [--holds 10000] [--messages 50000]
                                 [--only "send, bare"] [--pin]

A child process runs a name server, a broker (ASYNC_FLUSH, temporary data directory) and a bare
asyncio echo server on random 127.0.0.1 ports, on uvloop; this process generates the load, in
two ways:

* "client" cases use `longboat.bench.loadgen` (the load generator shared with `longboat bench`):
  Longboat's producer and typed pull requests, so they include the Python client's cost per
  message, which on 2 cores competes with the broker for CPU;
* "bare" cases send requests built once with `longboat.protocol` over `longboat.remoting`, so
  they show what the broker itself can do when the client costs next to nothing.

Throughput cases also report the broker process's CPU over the case and messages per broker
CPU-second (the broker's capacity, independent of how much CPU the client left it).  Each case
runs `--runs` times and the median of each figure is printed.

Same-run baseline: the round trip of a 256-byte write through the bare echo server (the same
loopback, the same loops, the same 2 ms pacing, nothing stored).  A wake-up is at least one such
round trip (send in, answer out), so `wake-up / echo` is what the broker adds: store the
message, find the parked pull, re-read the queue, encode the answer.

`--pin` (for the send-beside-parked cases) puts this process on CPU 0 and the broker and the
parking process on CPU 1, so the timed client is never kept off a core by the broker answering
the woken pulls after the send was answered: what remains is the broker's own send path.

Targets (issue #4): wake-up p50 <= 0.5 ms and p99 <= 2 ms, batched produce >= 100,000 msgs/s.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import replace
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any, NamedTuple

from bench import results
from bench.wire import bare_pull, bare_send
from longboat.bench import loadgen
from longboat.bench.stats import latency_figures
from longboat.bench.usage import sample
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.batch import BatchItem, encode_batch
from longboat.protocol.headers import (
    PullMessageRequestHeader,
    QueueRequestHeader,
)
from longboat.remoting import RemotingClient
from longboat.remoting.event_loop import run

BODY = 256
BATCH = 64
IN_FLIGHT = 4
WARMUP = 20
PARK_S = 0.002  # time a parked pull gets to reach the broker before the send


# ---------------------------------------------------------------------------- the servers


class Echo(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(data)


async def start_servers(data_dir: str, *, grpc: bool = False) -> tuple[Any, Any]:
    """A name server and a broker (ASYNC_FLUSH, store in `data_dir`) on free 127.0.0.1 ports
    in this process, started; the caller stops them (broker first)."""
    from longboat.broker import BrokerConfig, BrokerController
    from longboat.namesrv import NameServer

    namesrv = NameServer("127.0.0.1", 0)
    await namesrv.start()
    broker = BrokerController(
        BrokerConfig(
            listen_host="127.0.0.1",
            listen_port=0,
            broker_ip1="127.0.0.1",
            namesrv_addr=namesrv.addr,
            store_path_root_dir=Path(data_dir),
            mapped_file_size_commit_log=256 * 1024 * 1024,
            grpc_listen_port=0 if grpc else -1,
        )
    )
    await broker.start()
    return namesrv, broker


async def _serve(data_dir: str, ready: Any, stop: Event, grpc: bool) -> None:
    namesrv, broker = await start_servers(data_dir, grpc=grpc)
    loop = asyncio.get_running_loop()
    echo = await loop.create_server(Echo, "127.0.0.1", 0)
    echo_port = echo.sockets[0].getsockname()[1]
    grpc_port = broker.grpc.port if broker.grpc is not None else 0
    ready.put((namesrv.addr, broker.broker_addr, echo_port, grpc_port))
    await loop.run_in_executor(None, stop.wait)
    echo.close()
    await broker.stop()
    await namesrv.stop()


def _server_child(data_dir: str, ready: Any, stop: Event, grpc: bool) -> None:
    run(_serve(data_dir, ready, stop, grpc))


class Servers(NamedTuple):
    namesrv: str
    broker: str
    echo_port: int
    pid: int
    grpc_port: int  # 0 when the gRPC endpoint is off


@contextmanager
def servers_in_child(*, grpc: bool = False) -> Iterator[Servers]:
    """A name server, a broker (with its gRPC endpoint when `grpc`) and an echo server in a
    child process on loopback ports, with a temporary data directory."""
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Queue()
    stop = ctx.Event()
    with tempfile.TemporaryDirectory(prefix="longboat-bench-") as data_dir:
        child = ctx.Process(target=_server_child, args=(data_dir, ready, stop, grpc), daemon=True)
        child.start()
        try:
            namesrv, broker_addr, echo_port, grpc_port = ready.get(timeout=60)
            assert child.pid is not None
            yield Servers(namesrv, broker_addr, echo_port, child.pid, grpc_port)
        finally:
            stop.set()
            child.join(30)
            if child.is_alive():
                child.kill()


# ---------------------------------------------------------------------------- bare clients


async def echo_round_trips(port: int, rounds: int) -> dict[str, float]:
    """The baseline: p50/p99/max of a 256-byte write answered by the bare echo server, paced
    like the wake-up rounds."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    frame = b"x" * BODY
    samples: list[float] = []
    for i in range(rounds + WARMUP):
        t0 = time.perf_counter()
        writer.write(frame)
        await reader.readexactly(BODY)
        if i >= WARMUP:
            samples.append((time.perf_counter() - t0) * 1e6)
        await asyncio.sleep(PARK_S)
    writer.close()
    return latency_figures(samples)


async def bare_produce(broker: str, messages: int) -> dict[str, float]:
    """Batches of 64 pre-encoded once, 4 in flight over one connection: what the broker can
    take when the client costs next to nothing."""
    client = RemotingClient()
    topic = loadgen.unique("BenchBare")
    body = encode_batch([BatchItem(b"x" * BODY, {"TAGS": "TagA"}) for _ in range(BATCH)])
    requests = [bare_send(topic, q, body, batch=True) for q in range(4)]
    await client.request(broker, replace(requests[0]), 10)  # creates the topic
    batches = messages // BATCH
    started = time.perf_counter()

    async def sender(k: int) -> None:
        for i in range(k, batches, IN_FLIGHT):
            response = await client.request(broker, replace(requests[i % 4]), 10)
            assert response.code == 0, response.remark

    await asyncio.gather(*(sender(k) for k in range(IN_FLIGHT)))
    seconds = time.perf_counter() - started
    await client.close()
    return {"messages": batches * BATCH, "seconds": seconds, "tps": batches * BATCH / seconds}


async def bare_wakeup(broker: str, rounds: int) -> dict[str, float]:
    """Park a pull on one connection, 2 ms later send one message on another; time from the
    send's write to the pull's answer."""
    consumer, producer = RemotingClient(), RemotingClient()
    topic = loadgen.unique("BenchBareWake")
    send = bare_send(topic, 0, b"x" * BODY, batch=False)
    await producer.request(broker, replace(send), 10)
    samples: list[float] = []
    for offset in range(1, rounds + WARMUP + 1):
        pull = bare_pull(pull_at(topic, offset, suspend_ms=5000))
        parked = asyncio.ensure_future(consumer.request(broker, pull, 10))
        await asyncio.sleep(PARK_S)
        t0 = time.perf_counter()
        sent = asyncio.ensure_future(producer.request(broker, replace(send), 10))
        response = await parked
        elapsed = time.perf_counter() - t0
        assert response.code == 0 and (await sent).code == 0, response.remark
        if offset > WARMUP:
            samples.append(elapsed * 1e6)
    await consumer.close()
    await producer.close()
    return latency_figures(samples)


def pull_at(topic: str, offset: int, *, suspend_ms: int) -> PullMessageRequestHeader:
    """One message of queue 0 at `offset`, parked up to `suspend_ms` until it is there."""
    return PullMessageRequestHeader.pulling(
        group="bench", topic=topic, queue_id=0, offset=offset, max_msgs=1, suspend_ms=suspend_ms
    )


async def _park_rounds(broker: str, topic: str, parked: int, pipe: Any) -> None:
    """The parked consumers, in their own process (their 1,000 answers would otherwise be
    decoded by the loop that times the send): per offset received, park `parked` pulls there,
    say "parked" once the broker holds them all, then "answered" once all were answered."""
    client = RemotingClient()
    loop = asyncio.get_running_loop()
    barrier = RemotingCommand.request(
        RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic, 0).to_ext()
    )
    while (offset := await loop.run_in_executor(None, pipe.recv)) is not None:
        pull = bare_pull(pull_at(topic, offset, suspend_ms=20_000))
        pulls = [
            asyncio.ensure_future(client.request(broker, replace(pull), 30)) for _ in range(parked)
        ]
        # Let every pull task write its request (a loop turn each), then the barrier: one
        # connection's requests are handled in order, so once it is answered every pull
        # before it is parked.
        for _ in range(3):
            await asyncio.sleep(0)
        await client.request(broker, replace(barrier), 30)
        pipe.send("parked")
        answers = await asyncio.gather(*pulls)
        assert all(a.code == 0 for a in answers), answers[0].remark
        pipe.send("answered")
    await client.close()


def _parker_child(broker: str, topic: str, parked: int, pipe: Any) -> None:
    run(_park_rounds(broker, topic, parked, pipe))


def pin(pids: tuple[int, ...], cpu: int) -> None:
    for pid in pids:
        os.sched_setaffinity(pid, {cpu})


async def bare_send_beside_parked(
    broker: str, rounds: int, parked: int, *, pinned_broker: int | None = None
) -> dict[str, float]:
    """Send latency with `parked` pulls parked on the queue the send lands on (issue #13: a
    send's latency must not grow with the consumers parked on its queue).  Each round a child
    process parks the pulls at the queue's end and waits until the broker holds them all; this
    process then times one send's round trip (which wakes them all) and waits for the child
    to have every answer before the next round."""
    producer = RemotingClient()
    topic = loadgen.unique("BenchParked")
    send = bare_send(topic, 0, b"x" * BODY, batch=False)
    await producer.request(broker, replace(send), 10)
    loop = asyncio.get_running_loop()
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    child = ctx.Process(target=_parker_child, args=(broker, topic, parked, there), daemon=True)
    child.start()
    assert child.pid is not None
    if pinned_broker is not None:
        pin((0,), 0)
        pin((pinned_broker, child.pid), 1)
    samples: list[float] = []
    try:
        for offset in range(1, rounds + WARMUP + 1):
            here.send(offset)
            assert await loop.run_in_executor(None, here.recv) == "parked"
            await asyncio.sleep(PARK_S)
            t0 = time.perf_counter()
            response = await producer.request(broker, replace(send), 10)
            elapsed = time.perf_counter() - t0
            assert response.code == 0, response.remark
            assert await loop.run_in_executor(None, here.recv) == "answered"
            if offset > WARMUP:
                samples.append(elapsed * 1e6)
    finally:
        here.send(None)
        child.join(30)
        await producer.close()
    return latency_figures(samples)


# ---------------------------------------------------------------------------- the cases


Case = Callable[[], Coroutine[Any, Any, dict[str, Any]]]
WAKEUP = "wake-up, client (send -> parked pull answered)"
PARKED = 1000
SEND_ALONE = "send, bare, nothing parked on its queue"
SEND_PARKED = f"send, bare, {PARKED} pulls parked on its queue"
BARE_WAKEUP = "wake-up, bare (send -> parked pull answered)"
ECHO = "baseline: echo round trip"


def cases(
    args: argparse.Namespace, namesrv: str, broker: str, echo_port: int, pid: int
) -> dict[str, Case]:
    opts = loadgen.LoadOptions(namesrv=namesrv, size=BODY, duration=60.0)
    pinned = pid if args.pin else None

    def with_broker_cpu(case: Case) -> Case:
        """Adds the broker process's CPU over the case, and messages per broker CPU-second."""

        async def measured() -> dict[str, Any]:
            first = sample(pid)
            figures = await case()
            last = sample(pid)
            cpu_s = last.cpu_s - first.cpu_s
            figures["broker_cpu_pct"] = 100 * cpu_s / max(last.at - first.at, 1e-9)
            if figures.get("messages"):
                figures["msgs_per_broker_cpu_s"] = figures["messages"] / max(cpu_s, 1e-9)
            return figures

        return measured

    async def produce_single() -> dict[str, Any]:
        single = replace(opts, messages=args.messages // 5)
        return (await loadgen.produce(single)).figures()

    async def produce_batched() -> dict[str, Any]:
        batched = replace(opts, messages=args.messages, batch=BATCH, concurrency=IN_FLIGHT)
        return (await loadgen.produce(batched)).figures()

    async def consume() -> dict[str, Any]:
        return (await loadgen.consume(replace(opts, batch=32), preloaded=args.messages)).figures()

    async def wakeup() -> dict[str, Any]:
        return (await loadgen.wakeup(opts, rounds=args.rounds)).figures()

    async def holds() -> dict[str, Any]:
        result = await loadgen.holds(opts, count=args.holds, window_s=args.window, pid=pid)
        return result.figures()

    return {
        "produce, client, 1 per request": with_broker_cpu(produce_single),
        f"produce, client, batches of {BATCH} x {IN_FLIGHT}": with_broker_cpu(produce_batched),
        f"produce, bare, batches of {BATCH} x {IN_FLIGHT}": with_broker_cpu(
            lambda: bare_produce(broker, args.messages)
        ),
        # No broker CPU here: the case stores its messages first, which would be counted.
        "consume, client, pulls of 32 x 4 queues": consume,
        WAKEUP: wakeup,
        BARE_WAKEUP: lambda: bare_wakeup(broker, args.rounds),
        ECHO: lambda: echo_round_trips(echo_port, args.rounds),
        SEND_ALONE: lambda: bare_send_beside_parked(
            broker, args.rounds // 5, 0, pinned_broker=pinned
        ),
        SEND_PARKED: lambda: bare_send_beside_parked(
            broker, args.rounds // 5, PARKED, pinned_broker=pinned
        ),
        f"idle {args.holds} parked pulls": holds,
    }


def medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = [k for k, v in runs[0].items() if isinstance(v, int | float) and k != "broker_pid"]
    return {k: statistics.median(float(r[k]) for r in runs) for k in keys}


SHOWN = (
    "tps",
    "p50_us",
    "p99_us",
    "max_us",
    "broker_cpu_pct",
    "msgs_per_broker_cpu_s",
    "cpu_pct",
    "rss_bytes_per_poll",
)


def report(name: str, figures: dict[str, float]) -> None:
    shown = ", ".join(f"{k} {figures[k]:,.1f}" for k in SHOWN if k in figures)
    print(f"  {name:<46} {shown}", flush=True)


class CaseResults(NamedTuple):
    """Every run's figures by case, their medians, and the comparisons printed after them."""

    per_run: dict[str, list[dict[str, Any]]]
    medians: dict[str, dict[str, float]]
    ratios: list[str]

    def say(self, line: str) -> None:
        """Print a comparison of the medians and keep it for the result."""
        print(line, flush=True)
        self.ratios.append(line)

    def record(self, benchmark: str, args: argparse.Namespace) -> dict[str, Any]:
        """The result document (`bench.results`): the medians table and the comparisons."""
        shown = [k for k in SHOWN if any(k in f for f in self.medians.values())]
        rows = [
            [name, *(f"{figures[k]:,.1f}" if k in figures else "" for k in shown)]
            for name, figures in self.medians.items()
        ]
        runs = len(next(iter(self.per_run.values()), []))
        page = {
            "targets": [],
            "tables": [
                {"title": f"medians of {runs} runs", "columns": ["case", *shown], "rows": rows},
                {"title": "comparisons", "columns": ["of the medians"],
                 "rows": [[line] for line in self.ratios]},
            ],
        }  # fmt: skip
        sizes = {k: v for k, v in vars(args).items() if k != "json"}
        return results.record(benchmark, sizes=sizes, runs=[self.per_run], page=page)


async def run_cases(table: dict[str, Case], runs: int) -> CaseResults:
    """Run every case `runs` times in turn, printing each run's figures, then the medians."""
    per_run: dict[str, list[dict[str, Any]]] = {name: [] for name in table}
    for r in range(runs):
        print(f"run {r + 1}/{runs}", flush=True)
        for name, case in table.items():
            figures = await case()
            per_run[name].append(figures)
            report(name, medians([figures]))
    print(f"\nmedians of {runs} runs", flush=True)
    summary = {name: medians(figures) for name, figures in per_run.items()}
    for name, figures in summary.items():
        report(name, figures)
    return CaseResults(per_run, summary, [])


async def bench(
    args: argparse.Namespace, namesrv: str, broker: str, echo_port: int, pid: int
) -> None:
    table = cases(args, namesrv, broker, echo_port, pid)
    if args.only:
        table = {name: case for name, case in table.items() if args.only in name}
    measured = await run_cases(table, args.runs)
    summary = measured.medians
    for name in (WAKEUP, BARE_WAKEUP):
        if name not in summary or ECHO not in summary:
            continue
        wake, echo = summary[name], summary[ECHO]
        measured.say(
            f"{name} / echo round trip: p50 {wake['p50_us'] / echo['p50_us']:.2f}x, "
            f"p99 {wake['p99_us'] / echo['p99_us']:.2f}x"
        )
    if SEND_ALONE in summary and SEND_PARKED in summary:
        alone, beside = summary[SEND_ALONE], summary[SEND_PARKED]
        measured.say(
            f"send with {PARKED} parked / with none: p50 "
            f"{beside['p50_us'] / alone['p50_us']:.2f}x, p99 "
            f"{beside['p99_us'] / alone['p99_us']:.2f}x"
        )
    print(f"result: {results.save(measured.record('broker_bench', args), args.json)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1000, help="wake-up rounds per run")
    parser.add_argument("--holds", type=int, default=10_000, help="parked pulls")
    parser.add_argument("--window", type=float, default=3.0, help="idle sampling window (s)")
    parser.add_argument("--messages", type=int, default=50_000, help="batched produce, consume")
    parser.add_argument("--only", default="", help="run only the cases whose name has this")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="send-beside-parked cases: this process on CPU 0, broker and parker on CPU 1",
    )
    results.add_json_option(parser, "broker_bench")
    args = parser.parse_args()

    with servers_in_child() as (namesrv, broker_addr, echo_port, pid, _):
        print(f"broker {broker_addr} (pid {pid}), name server {namesrv}", flush=True)
        run(bench(args, namesrv, broker_addr, echo_port, pid))


if __name__ == "__main__":
    main()
