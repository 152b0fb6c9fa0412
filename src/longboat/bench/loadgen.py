"""The load generator behind `longboat bench`: produce, consume, e2e, wakeup and holds.

Every case talks to a running name server and broker through Longboat's own client (the
producer for sends, the push consumer for e2e, the typed request layer for raw pulls), so the
figures are what an application on this client sees.  Each case has a message or round budget
and a time budget (`duration`), whichever ends first.

Timestamps that cross a send and a receive are `time.monotonic_ns()` in the first 8 bytes of
the body (CLOCK_MONOTONIC is system-wide on Linux, so a producer and a consumer in different
processes on one host agree); bodies are at least 8 bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from dataclasses import dataclass, replace

import psutil

from longboat.bench.stats import BenchResult
from longboat.bench.usage import cpu_pct, sample
from longboat.client import (
    ClientConfig,
    Message,
    MessageExt,
    MessageQueue,
    NoRouteError,
    PullResult,
    PullStatus,
)
from longboat.client.admin import Admin
from longboat.client.config import parse_namesrv_addrs
from longboat.client.consume_from import ConsumeFrom
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, PushConsumer
from longboat.client.queue_reader import QueueReader

STAMP_BYTES = 8
# RocketMQ's broker caps one pull at 32 messages (maxTransferCountOnMessageInMemory).
MAX_PULL_BATCH = 32
ROUTE_WAIT_S = 10.0
_names = itertools.count(1)


@dataclass(frozen=True)
class LoadOptions:
    """RocketMQ benchmark-style knobs.  `concurrency` is its `-w` thread count: that many
    sends (or pull loops) in flight at once."""

    namesrv: str
    topic: str = ""  # empty: a fresh topic per case, so old messages never mix in
    concurrency: int = 1
    size: int = 256
    batch: int = 1
    duration: float = 10.0
    messages: int = 0  # 0: no message budget, only the duration
    tags: str | None = None
    queues: int = 4
    group: str = ""  # empty: a fresh group per case

    def __post_init__(self) -> None:
        if self.concurrency < 1 or self.batch < 1 or self.queues < 1:
            raise ValueError("concurrency, batch and queues must be at least 1")
        if self.size < STAMP_BYTES:
            raise ValueError(f"message size must be at least {STAMP_BYTES} bytes (the timestamp)")
        if self.duration <= 0:
            raise ValueError("duration must be positive")


def unique(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{int(time.time())}_{next(_names)}"


def stamped_body(size: int) -> bytes:
    return time.monotonic_ns().to_bytes(STAMP_BYTES, "little") + b"x" * (size - STAMP_BYTES)


def age_us(body: bytes, now_ns: int) -> float:
    """Microseconds since the body was stamped."""
    return (now_ns - int.from_bytes(body[:STAMP_BYTES], "little")) / 1000


def client_config(opts: LoadOptions, role: str) -> ClientConfig:
    return ClientConfig(parse_namesrv_addrs(opts.namesrv), instance_name=unique(f"bench-{role}"))


# ---------------------------------------------------------------------------- topics


async def prepare_topic(opts: LoadOptions, case: str, *, queues: int | None = None) -> LoadOptions:
    """Options with a topic and group filled in; the topic exists and is routable."""
    topic = opts.topic or unique(f"Bench{case.capitalize()}")
    group = opts.group or unique(f"bench_{case}")
    opts = replace(opts, topic=topic, group=group, queues=queues or opts.queues)
    async with (
        Admin(config=client_config(opts, "admin")) as admin,
        QueueReader(config=client_config(opts, "admin")) as reader,
    ):
        with contextlib.suppress(NoRouteError):
            if await reader.queues(topic):
                return opts
        await admin.create_topic(topic, queue_nums=opts.queues)
        await reader.queues(topic, wait=ROUTE_WAIT_S)
    return opts


# ---------------------------------------------------------------------------- produce


async def send_for(
    producer: Producer,
    opts: LoadOptions,
    deadline: float,
    budget: list[int],
    result: BenchResult,
    *,
    queue: MessageQueue | None = None,
) -> None:
    """One sender: send (or send batches) until the deadline or the shared budget runs out,
    recording each request's latency."""
    perf = time.perf_counter
    while perf() < deadline:
        if opts.messages:
            if budget[0] <= 0:
                return
            n = min(opts.batch, budget[0])
            budget[0] -= n
        else:
            n = opts.batch
        started = perf()
        if n == 1:
            await producer.send(
                Message(opts.topic, stamped_body(opts.size), tags=opts.tags), queue=queue
            )
        else:
            msgs = [Message(opts.topic, stamped_body(opts.size), tags=opts.tags) for _ in range(n)]
            await producer.send_batch(msgs, queue=queue)
        result.latencies_us.append((perf() - started) * 1e6)
        result.messages += n


async def produce(opts: LoadOptions) -> BenchResult:
    """`concurrency` senders for `duration` (or `messages`); TPS and per-request latency."""
    opts = await prepare_topic(opts, "produce")
    result = BenchResult(
        "produce", latency_of="send" if opts.batch == 1 else f"batch of {opts.batch}"
    )
    async with Producer(unique("bench_pg"), config=client_config(opts, "producer")) as producer:
        budget = [opts.messages]
        started = time.perf_counter()
        deadline = started + opts.duration
        await asyncio.gather(
            *(send_for(producer, opts, deadline, budget, result) for _ in range(opts.concurrency))
        )
        result.seconds = time.perf_counter() - started
    result.extra.update(topic=opts.topic, size=opts.size, batch=opts.batch)
    return result


async def preload(opts: LoadOptions, count: int) -> None:
    """Store `count` messages, untimed (batches of 64, the queues in turn)."""
    preload_opts = replace(opts, messages=count, batch=min(64, count), duration=3600)
    async with Producer(unique("bench_pre"), config=client_config(opts, "preload")) as producer:
        budget = [count]
        deadline = time.perf_counter() + 3600
        scratch = BenchResult("preload")
        await send_for(producer, preload_opts, deadline, budget, scratch)


# ---------------------------------------------------------------------------- raw pulls


class Puller:
    """Raw PULL_MESSAGE through `QueueReader`: what any consumer must do, without the push
    consumer's process queue and workers.  Offsets are committed with the next pull (the
    commit flag), as RocketMQ's consumers do."""

    def __init__(self, opts: LoadOptions, reader: QueueReader) -> None:
        self.opts = opts
        self.reader = reader

    @classmethod
    async def open(cls, opts: LoadOptions) -> Puller:
        reader = QueueReader(config=client_config(opts, "puller"))
        await reader.start()
        return cls(opts, reader)

    async def close(self) -> None:
        await self.reader.shutdown()

    async def queues(self) -> list[MessageQueue]:
        return await self.reader.queues(self.opts.topic, wait=ROUTE_WAIT_S)

    async def pull(
        self,
        mq: MessageQueue,
        offset: int,
        *,
        max_msgs: int,
        suspend_s: float,
        commit: int = -1,
        group: str | None = None,
    ) -> PullResult:
        """One pull for `group` (default: the options' group); `commit` >= 0 commits that
        offset with it; `suspend_s` > 0 lets the broker park it that long."""
        return await self.reader.pull(
            mq,
            offset,
            group=group or self.opts.group,
            max_msgs=max_msgs,
            timeout=suspend_s + 10,
            expression=self.opts.tags or "*",
            suspend=suspend_s,
            commit_offset=commit if commit >= 0 else None,
        )

    async def commit(self, mq: MessageQueue, offset: int, group: str | None = None) -> None:
        """Commit an offset on its own (the last one, which no next pull carries)."""
        await self.reader.commit(group or self.opts.group, mq, offset)


# ---------------------------------------------------------------------------- consume


async def consume(opts: LoadOptions, *, preloaded: int) -> BenchResult:
    """Store `preloaded` messages (untimed), then drain them with one pull loop per queue in
    batches of `batch` (at most 32): TPS and per-pull latency."""
    opts = await prepare_topic(opts, "consume")
    await preload(opts, preloaded)
    want = min(opts.messages or preloaded, preloaded)
    result = BenchResult("consume", latency_of=f"pull of up to {min(opts.batch, MAX_PULL_BATCH)}")
    puller = await Puller.open(opts)
    try:
        queues = await puller.queues()
        started = time.perf_counter()
        deadline = started + opts.duration

        async def drain(mq: MessageQueue) -> None:
            offset = 0
            perf = time.perf_counter
            while result.messages < want and perf() < deadline:
                t0 = perf()
                got = await puller.pull(
                    mq, offset, max_msgs=min(opts.batch, MAX_PULL_BATCH), suspend_s=0,
                    commit=offset,
                )  # fmt: skip
                if got.status is PullStatus.NO_NEW_MSG:
                    return
                result.latencies_us.append((perf() - t0) * 1e6)
                result.messages += len(got.messages)
                offset = got.next_begin_offset
            await puller.commit(mq, offset)  # what the last pull read (untimed)

        await asyncio.gather(*(drain(mq) for mq in queues))
        result.seconds = time.perf_counter() - started
    finally:
        await puller.close()
    result.extra.update(topic=opts.topic, group=opts.group, preloaded=preloaded, batch=opts.batch)
    return result


# ---------------------------------------------------------------------------- e2e


async def e2e(opts: LoadOptions) -> BenchResult:
    """Producers send stamped messages for `duration` while a push consumer (a fresh group,
    subscribed before the first send) receives them: TPS from first send to last delivery,
    latency from send to the listener."""
    opts = await prepare_topic(opts, "e2e")
    result = BenchResult("e2e", latency_of="send → push listener")
    sent = BenchResult("sent")
    everything_in = asyncio.Event()
    producing = True
    last_delivery = 0.0

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        nonlocal last_delivery
        now = time.monotonic_ns()
        result.latencies_us.extend(age_us(m.body, now) for m in msgs)
        result.messages += len(msgs)
        last_delivery = time.perf_counter()
        if not producing and result.messages >= sent.messages:
            everything_in.set()

    consumer = PushConsumer(
        opts.group,
        config=client_config(opts, "e2e-consumer"),
        consume_from=ConsumeFrom.FIRST_OFFSET,
    )
    consumer.subscribe(opts.topic, opts.tags or "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        async with Producer(unique("bench_pg"), config=client_config(opts, "e2e-producer")) as p:
            budget = [opts.messages]
            started = time.perf_counter()
            deadline = started + opts.duration
            await asyncio.gather(
                *(send_for(p, opts, deadline, budget, sent) for _ in range(opts.concurrency))
            )
        producing = False
        if result.messages < sent.messages:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(everything_in.wait(), max(10.0, opts.duration))
        result.seconds = max(last_delivery - started, 1e-9)
    finally:
        await consumer.shutdown()
    result.extra.update(topic=opts.topic, sent=sent.messages, size=opts.size)
    return result


# ---------------------------------------------------------------------------- wakeup


async def wakeup(opts: LoadOptions, *, rounds: int, warmup: int = 10) -> BenchResult:
    """Long-poll wake-up on an idle queue: park a pull, give it 2 ms to land, send one stamped
    message; latency is send to the pull's answer in the consumer.  Sender and consumer share
    this process (the peer harness runs them in two)."""
    opts = await prepare_topic(opts, "wakeup", queues=1)
    result = BenchResult("wakeup", latency_of="send → parked pull answered")
    puller = await Puller.open(opts)
    try:
        [mq] = await puller.queues()
        async with Producer(unique("bench_pg"), config=client_config(opts, "wake-producer")) as p:
            offset = 0
            started = time.perf_counter()
            deadline = started + opts.duration
            for i in range(warmup + rounds):
                if time.perf_counter() > deadline:
                    break
                parked = asyncio.ensure_future(
                    puller.pull(mq, offset, max_msgs=1, suspend_s=5, commit=offset)
                )
                await asyncio.sleep(0.002)
                await p.send(Message(opts.topic, stamped_body(opts.size), tags=opts.tags), queue=mq)
                got = await parked
                while not got.messages:  # the send beat the park: read it now
                    got = await puller.pull(mq, got.next_begin_offset, max_msgs=1, suspend_s=5)
                now = time.monotonic_ns()
                offset = got.next_begin_offset
                if i >= warmup:
                    result.latencies_us.append(age_us(got.messages[0].body, now))
                    result.messages += 1
            result.seconds = time.perf_counter() - started
    finally:
        await puller.close()
    result.extra.update(topic=opts.topic, rounds=len(result.latencies_us))
    return result


# ---------------------------------------------------------------------------- holds


def broker_pid(broker_addr: str) -> int | None:
    """The local process listening on the broker's port, when it is on this host and ours to
    see (it may be this very process: an in-process broker)."""
    port = int(broker_addr.rpartition(":")[2])
    with contextlib.suppress(psutil.Error):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                return conn.pid
    return None


# Parking is over once the broker uses less than this share of a core over a step; a JVM's
# background threads alone stay well below it.
SETTLE_BUSY = 0.2
SETTLE_STEP_S = 0.5
SETTLE_LIMIT_S = 10.0


async def _settled(pid: int) -> float:
    """Wait until process `pid` is no longer busy (below `SETTLE_BUSY` of a core over a step),
    at most `SETTLE_LIMIT_S`; returns the seconds waited."""
    waited = 0.0
    previous = sample(pid)
    while waited < SETTLE_LIMIT_S:
        await asyncio.sleep(SETTLE_STEP_S)
        waited += SETTLE_STEP_S
        now = sample(pid)
        if now.cpu_s - previous.cpu_s < SETTLE_BUSY * SETTLE_STEP_S:
            break
        previous = now
    return waited


async def holds(
    opts: LoadOptions,
    *,
    count: int,
    window_s: float = 5.0,
    settle_s: float = 1.0,
    pid: int | None = None,
) -> BenchResult:
    """Park `count` pulls on one idle queue (one connection), then sample the broker process's
    CPU and RSS over `window_s`; finally one message wakes them all, timed to the last answer.
    The window opens `settle_s` after the pulls are sent and once the broker has stopped
    taking them in (`_settled`), so a slow machine's parking is not counted as idle cost.
    Needs the broker's pid (`pid`, else found by its listening port on this host)."""
    opts = await prepare_topic(opts, "holds", queues=1)
    result = BenchResult("holds", latency_of="one send → every parked pull answered")
    puller = await Puller.open(opts)
    try:
        [mq] = await puller.queues()
        addr = await puller.reader.master_addr(mq)
        pid = pid if pid is not None else broker_pid(addr)
        if pid is None:
            raise ValueError(f"cannot find the broker process behind {addr}: pass its pid")
        before = sample(pid)
        suspend_s = settle_s + SETTLE_LIMIT_S + window_s + 30
        parked = [
            asyncio.ensure_future(puller.pull(mq, 0, max_msgs=1, suspend_s=suspend_s))
            for _ in range(count)
        ]
        await asyncio.sleep(settle_s)
        settled_s = settle_s + await _settled(pid)
        first = sample(pid)
        await asyncio.sleep(window_s)
        last = sample(pid)
        async with Producer(unique("bench_pg"), config=client_config(opts, "holds-producer")) as p:
            t0 = time.perf_counter()
            await p.send(Message(opts.topic, stamped_body(opts.size)), queue=mq)
            answers = await asyncio.gather(*parked)
            result.seconds = time.perf_counter() - t0
        result.messages = sum(len(a.messages) for a in answers)
        result.latencies_us.append(result.seconds * 1e6)
        result.extra.update(
            parked=count,
            window_s=window_s,
            settled_s=round(settled_s, 1),
            cpu_pct=round(cpu_pct(first, last), 3),
            rss_bytes_per_poll=round((first.rss - before.rss) / max(count, 1), 1),
            broker_pid=pid,
        )
    finally:
        await puller.close()
    return result
