"""Client benchmark: producer → push consumer end to end, and consumer CPU per 1,000 messages.

    python -m bench.client_bench [--runs 3] [--messages 20000] [--namesrv HOST:PORT]

Without --namesrv a name server and broker are started in a child process on loopback ports
(so their CPU is not counted as the consumer's), with a temporary data directory.

Cases, each run `--runs` times and reported as the median:

* drain: `--messages` 256-byte messages already stored in a 4-queue topic; a new group's push
  consumer (no-op async listener, FIRST_OFFSET) consumes them all.  Reported: msgs/s and this
  process's CPU per 1,000 messages.  Baseline in the same run: a raw long-polling pull loop over
  the same queues through the typed request layer (`ClientAPI.pull`, decode and tag check
  included) — the work any consumer must do; the push consumer's ratio to it is its overhead
  (process queue, workers, offsets).
* live: a producer in a child process sends `--messages` messages one by one while the push
  consumer runs; throughput is messages over the time from the first send to the last
  delivery.  Baseline in the same run: the same producer alone (the consumer cannot beat it).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench import results
from bench.broker_bench import servers_in_child
from longboat.client import ClientConfig, Message, PullStatus
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeFrom, PushConsumer
from longboat.client.queue_reader import QueueReader
from longboat.protocol.message import MessageExt

BODY = b"x" * 256
QUEUES = 4


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def config(namesrv: str, name: str) -> ClientConfig:
    return ClientConfig([namesrv], client_ip="127.0.0.1", instance_name=name)


@dataclass
class Figures:
    rate: float  # messages per second
    cpu_ms_per_1000: float


async def create_topic(namesrv: str, topic: str) -> None:
    async with Admin(config=config(namesrv, "bench-admin")) as admin:
        await admin.create_topic(topic, queue_nums=QUEUES)


async def produce(namesrv: str, topic: str, n: int, *, batch: int = 1) -> float:
    """Send n messages (in batches of `batch`); returns the elapsed seconds."""
    async with Producer("bench-pg", config=config(namesrv, f"bench-producer-{os.getpid()}")) as p:
        start = time.perf_counter()
        if batch == 1:
            for i in range(n):
                await p.send(Message(topic, BODY, tags="TagA", keys=str(i)))
        else:
            for i in range(0, n, batch):
                size = min(batch, n - i)
                await p.send_batch([Message(topic, BODY, tags="TagA")] * size)
        return time.perf_counter() - start


async def drain_with_push(namesrv: str, topic: str, n: int, group: str) -> Figures:
    done = asyncio.Event()
    got = 0

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        nonlocal got
        got += len(msgs)
        if got >= n:
            done.set()

    consumer = PushConsumer(
        group, config=config(namesrv, group), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    await consumer.start()
    await done.wait()
    elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    await consumer.shutdown()
    return Figures(n / elapsed, cpu * 1e6 / n)


async def drain_with_raw_pulls(namesrv: str, topic: str, n: int, group: str) -> Figures:
    """The floor: one pull loop per queue through QueueReader.pull, nothing else."""
    async with QueueReader(config=config(namesrv, group)) as reader:
        queues = await reader.queues(topic)
        got = 0
        all_in = asyncio.Event()
        cpu0, t0 = cpu_seconds(), time.perf_counter()

        async def pull_queue(q: int) -> None:
            # Long polls, like a consumer's: a drained queue's pull is held until the end.
            nonlocal got
            mq = queues[q]
            offset = 0
            while True:
                result = await reader.pull(
                    mq, offset, group=group, max_msgs=32, timeout=5, suspend=1.0
                )
                offset = result.next_begin_offset
                if result.status is PullStatus.FOUND:
                    got += len(result.messages)
                    if got >= n:
                        all_in.set()

        tasks = [asyncio.create_task(pull_queue(q)) for q in range(QUEUES)]
        await all_in.wait()
        elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return Figures(got / elapsed, cpu * 1e6 / max(got, 1))


def _producer_child(namesrv: str, topic: str, n: int, started: multiprocessing.Queue) -> None:
    started.put(time.time())
    asyncio.run(produce(namesrv, topic, n))


async def live(namesrv: str, topic: str, n: int, group: str) -> float:
    """Messages per second from the first send (another process) to the last delivery."""
    done = asyncio.Event()
    got = 0

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        nonlocal got
        got += len(msgs)
        if got >= n:
            done.set()

    consumer = PushConsumer(group, config=config(namesrv, group))
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    await consumer.start()
    # LAST_OFFSET: every queue must know where it starts before the first send.
    while not consumer.process_queues() or any(
        pq.committed_offset is None for pq in consumer.process_queues().values()
    ):
        await asyncio.sleep(0.01)
    ctx = multiprocessing.get_context("spawn")
    started: multiprocessing.Queue = ctx.Queue()
    child = ctx.Process(target=_producer_child, args=(namesrv, topic, n, started))
    child.start()
    first_send = await asyncio.to_thread(started.get)
    await done.wait()
    last = time.time()
    await asyncio.to_thread(child.join)
    await consumer.shutdown()
    return n / (last - first_send)


def producer_alone(namesrv: str, topic: str, n: int) -> float:
    ctx = multiprocessing.get_context("spawn")
    started: multiprocessing.Queue = ctx.Queue()
    child = ctx.Process(target=_producer_child, args=(namesrv, topic, n, started))
    child.start()
    first = started.get()
    child.join()
    return n / (time.time() - first)


def median(values: list[float]) -> float:
    return statistics.median(values)


async def bench(namesrv: str, runs: int, n: int) -> tuple[results.Page, list[dict[str, float]]]:
    """The medians table, printed and kept, and every run's figures."""
    push: list[Figures] = []
    raw: list[Figures] = []
    e2e: list[float] = []
    alone: list[float] = []
    for run in range(runs):
        topic = f"BenchDrain{os.getpid()}x{run}"
        await create_topic(namesrv, topic)
        await produce(namesrv, topic, n, batch=100)
        # Alternate which goes first, so page-cache warmth does not favour one of them.
        order: list[tuple[list[Figures], Callable[..., object]]] = [
            (push, drain_with_push),
            (raw, drain_with_raw_pulls),
        ]
        for sink, fn in order if run % 2 == 0 else order[::-1]:
            sink.append(await fn(namesrv, topic, n, f"bench_{fn.__name__}_{run}"))  # type: ignore[misc]
        live_topic = f"BenchLive{os.getpid()}x{run}"
        await create_topic(namesrv, live_topic)
        alone.append(await asyncio.to_thread(producer_alone, namesrv, live_topic, n))
        e2e.append(await live(namesrv, live_topic, n, f"bench_live_{run}"))
        print(
            f"run {run + 1}: drain push {push[-1].rate:,.0f} msg/s {push[-1].cpu_ms_per_1000:.1f} "
            f"ms CPU/1000 | raw pulls {raw[-1].rate:,.0f} msg/s {raw[-1].cpu_ms_per_1000:.1f} "
            f"ms CPU/1000 | live {e2e[-1]:,.0f} msg/s | producer alone {alone[-1]:,.0f} msg/s",
            flush=True,
        )
    p_rate, r_rate = median([f.rate for f in push]), median([f.rate for f in raw])
    p_cpu = median([f.cpu_ms_per_1000 for f in push])
    r_cpu = median([f.cpu_ms_per_1000 for f in raw])
    e, a = median(e2e), median(alone)
    rows = [
        (
            f"drain {n} msgs, push consumer",
            f"{p_rate:,.0f} msgs/s",
            f"raw pull loop {r_rate:,.0f} msgs/s",
            p_rate / r_rate,
        ),
        (
            "consumer CPU per 1,000 msgs",
            f"{p_cpu:.1f} ms",
            f"raw pull loop {r_cpu:.1f} ms",
            p_cpu / r_cpu,
        ),
        (
            "live producer → push consumer",
            f"{e:,.0f} msgs/s",
            f"producer alone {a:,.0f} msgs/s",
            e / a,
        ),
    ]
    page = results.Page()
    page.table(f"medians of {runs} runs", ["case", "median", "baseline (same run)", "ratio"],
               ["---", "---:", "---:", "---:"])  # fmt: skip
    for case, value, baseline, ratio in rows:
        page.row(case, value, baseline, f"{ratio:.2f}x")
    measured = [
        {"push_msgs_per_s": p.rate, "push_cpu_ms_per_1000": p.cpu_ms_per_1000,
         "raw_msgs_per_s": r.rate, "raw_cpu_ms_per_1000": r.cpu_ms_per_1000,
         "live_msgs_per_s": e_, "producer_alone_msgs_per_s": a_}
        for p, r, e_, a_ in zip(push, raw, e2e, alone, strict=True)
    ]  # fmt: skip
    return page, measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--namesrv", help="use running servers instead of starting them")
    results.add_json_option(parser, "client_bench")
    args = parser.parse_args()
    if args.namesrv:
        page, measured = asyncio.run(bench(args.namesrv, args.runs, args.messages))
    else:
        with servers_in_child() as (namesrv, broker_addr, _, pid, _):
            print(f"broker {broker_addr} (pid {pid}), name server {namesrv}", flush=True)
            page, measured = asyncio.run(bench(namesrv, args.runs, args.messages))
    sizes = {"runs": args.runs, "messages": args.messages, "own servers": args.namesrv is None}
    result = results.record("client_bench", sizes=sizes, runs=measured, page=page.as_dict())
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
