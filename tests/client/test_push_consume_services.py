"""Consume services without a network: what reaches the listener, in what order, what commits.

These drive the services directly with process queues; the end-to-end behaviour against a
real broker is in test_push_e2e.py / test_orderly_e2e.py."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import defaultdict

import pytest

from longboat.client.consume.process_queue import FlowLimits, ProcessQueue
from longboat.client.push import orderly
from longboat.client.push.concurrent import ConcurrentConsumeService
from longboat.client.push.listener import (
    ConcurrentContext,
    ConsumeResult,
    OrderlyContext,
    OrderlyResult,
)
from longboat.client.push.orderly import OrderlyConsumeService
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MessageQueue

QUEUES = [MessageQueue("T", "b", i) for i in range(4)]


def batch(mq: MessageQueue, start: int, n: int) -> list[MessageExt]:
    return [
        MessageExt("T", f"{mq.queue_id}:{o}".encode(), queue_id=mq.queue_id, queue_offset=o)
        for o in range(start, start + n)
    ]


class Commits:
    def __init__(self) -> None:
        self.offsets: dict[MessageQueue, int] = {}
        self.changed = asyncio.Event()

    def __call__(self, mq: MessageQueue, pq: ProcessQueue, offset: int | None) -> None:
        if offset is not None:
            self.offsets[mq] = offset
            self.changed.set()

    async def wait_for(self, wanted: dict[MessageQueue, int]) -> None:
        async with asyncio.timeout(20):
            while any(self.offsets.get(mq) != o for mq, o in wanted.items()):
                self.changed.clear()
                await self.changed.wait()


class FakeRedelivery:
    """Stands in for the broker's send-back: records what was handed back."""

    def __init__(self, accept: bool) -> None:
        self.accept = accept
        self.handed: list[tuple[int, int]] = []

    async def redeliver(
        self,
        mq: MessageQueue,
        msg: MessageExt,
        delay: int,
        limit: int,
        *,
        reason: str | None = None,
    ) -> bool:
        self.handed.append((msg.queue_offset, msg.reconsume_times))
        return self.accept


async def test_sync_listener_runs_on_threads_and_commits_everything() -> None:
    seen: list[bytes] = []
    threads: set[str] = set()

    def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        threads.add(threading.current_thread().name)
        seen.extend(m.body for m in msgs)

    commits = Commits()
    service = ConcurrentConsumeService(
        listener, workers=4, batch_max=3, max_reconsume_times=16, redelivery=None, consumed=commits
    )
    service.start()
    pqs = {mq: ProcessQueue() for mq in QUEUES}
    for mq, pq in pqs.items():
        service.submit(mq, pq, pq.put(batch(mq, 0, 20)))
    await commits.wait_for({mq: 20 for mq in QUEUES})
    await service.stop(5)
    assert sorted(seen) == sorted(m.body for mq in QUEUES for m in batch(mq, 0, 20))
    assert all(name.startswith("longboat-consume") for name in threads)


async def test_failures_go_back_to_the_broker_or_are_retried_locally() -> None:
    attempts: dict[int, int] = defaultdict(int)

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
        attempts[msgs[0].queue_offset] += 1
        if msgs[0].queue_offset == 3:
            raise RuntimeError("poison")
        return ConsumeResult.RECONSUME_LATER if msgs[0].queue_offset == 5 else None  # type: ignore[return-value]

    mq = QUEUES[0]
    # The broker takes failures back: they count as consumed, the offset moves past them.
    commits, broker = Commits(), FakeRedelivery(accept=True)
    service = ConcurrentConsumeService(
        listener,
        workers=2,
        batch_max=1,
        max_reconsume_times=16,
        redelivery=broker,  # type: ignore[arg-type]
        consumed=commits,
    )
    service.start()
    pq = ProcessQueue()
    service.submit(mq, pq, pq.put(batch(mq, 0, 8)))
    await commits.wait_for({mq: 8})
    await service.stop(5)
    assert sorted(broker.handed) == [(3, 0), (5, 0)]

    # The broker is unreachable: the failed message stays pending and is retried locally
    # with its reconsume count raised; the committed offset waits for it.
    attempts.clear()
    commits, broker = Commits(), FakeRedelivery(accept=False)
    service = ConcurrentConsumeService(
        listener,
        workers=2,
        batch_max=1,
        max_reconsume_times=16,
        redelivery=broker,  # type: ignore[arg-type]
        consumed=commits,
        local_retry_delay=0.05,
    )
    service.start()
    pq = ProcessQueue()
    service.submit(mq, pq, pq.put(batch(mq, 0, 4)))
    async with asyncio.timeout(20):
        while attempts[3] < 3:
            await asyncio.sleep(0.01)
    assert commits.offsets[mq] == 3
    assert [r for o, r in broker.handed if o == 3][:3] == [0, 1, 2]
    await service.stop(5)


async def test_dropped_queue_gets_no_new_listener_calls() -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    calls: list[int] = []

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        calls.append(msgs[0].queue_offset)
        started.set()
        await release.wait()

    commits = Commits()
    service = ConcurrentConsumeService(
        listener, workers=1, batch_max=1, max_reconsume_times=16, redelivery=None, consumed=commits
    )
    service.start()
    mq, pq = QUEUES[0], ProcessQueue()
    service.submit(mq, pq, pq.put(batch(mq, 0, 5)))
    await started.wait()
    pq.dropped = True
    assert not await service.inflight.wait_idle(mq, timeout=0.05)
    release.set()
    assert await service.inflight.wait_idle(mq, timeout=5)
    await service.stop(5)
    assert calls == [0]
    assert pq.committed_offset == 0  # the dropped queue's result is not committed


async def test_orderly_keeps_per_queue_order_with_eight_workers_and_a_failure() -> None:
    received: dict[MessageQueue, list[int]] = defaultdict(list)
    running: dict[MessageQueue, int] = defaultdict(int)
    overlaps = 0
    failures = {(QUEUES[1], 7): 2}

    async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> OrderlyResult | None:
        nonlocal overlaps
        running[ctx.mq] += 1
        overlaps += running[ctx.mq] > 1
        await asyncio.sleep(0)
        running[ctx.mq] -= 1
        key = (ctx.mq, msgs[0].queue_offset)
        received[ctx.mq].extend(m.queue_offset for m in msgs)
        if failures.get(key):
            failures[key] -= 1
            ctx.suspend_time = 0.01
            return OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return None

    commits = Commits()
    service = OrderlyConsumeService(
        listener,
        instance=None,  # type: ignore[arg-type]
        group="g",
        workers=8,
        batch_max=1,
        max_reconsume_times=None,
        redelivery=None,
        consumed=commits,
        use_broker_locks=False,
    )
    service.start()
    pqs = {mq: ProcessQueue(FlowLimits(max_span=None)) for mq in QUEUES}
    for start in range(0, 30, 10):
        for mq, pq in pqs.items():
            service.submit(mq, pq, pq.put(batch(mq, start, 10)))
    await commits.wait_for({mq: 30 for mq in QUEUES})
    await service.stop(5)
    assert overlaps == 0
    for mq in QUEUES:
        expected = list(range(30))
        if mq == QUEUES[1]:
            expected[8:8] = [7, 7]  # the failing message, twice more, before its successors
        assert received[mq] == expected


async def test_orderly_dead_letters_after_the_maximum() -> None:
    async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> OrderlyResult:
        ctx.suspend_time = 0.01
        if msgs[0].queue_offset == 1:
            return OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return OrderlyResult.SUCCESS

    commits, broker = Commits(), FakeRedelivery(accept=True)
    service = OrderlyConsumeService(
        listener,
        instance=None,  # type: ignore[arg-type]
        group="g",
        workers=2,
        batch_max=1,
        max_reconsume_times=2,
        redelivery=broker,  # type: ignore[arg-type]
        consumed=commits,
        use_broker_locks=False,
    )
    service.start()
    mq, pq = QUEUES[0], ProcessQueue(FlowLimits(max_span=None))
    service.submit(mq, pq, pq.put(batch(mq, 0, 3)))
    await commits.wait_for({mq: 3})
    await service.stop(5)
    assert broker.handed == [(1, 2)]
    assert service.dead_lettered == 1 and service.suspended == 2


async def test_a_listener_result_that_is_not_a_result_fails_and_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """None is success; `True` (a common slip) is neither None nor a ConsumeResult: it counts
    as a failure — nothing is lost — and one warning says what was returned."""
    calls = 0

    def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> object:
        nonlocal calls
        calls += 1
        return True if calls <= 2 else None

    commits = Commits()
    service = ConcurrentConsumeService(
        listener,  # type: ignore[arg-type]  # returning True is the mistake under test
        workers=1,
        batch_max=1,
        max_reconsume_times=16,
        redelivery=None,
        consumed=commits,
        local_retry_delay=0.05,
    )
    mq = QUEUES[0]
    pq = ProcessQueue()
    with caplog.at_level(logging.WARNING, "longboat.client.push.listener"):
        service.start()
        service.submit(mq, pq, pq.put(batch(mq, 0, 1)))
        await commits.wait_for({mq: 1})
        await service.stop(5)
    warnings = [r.getMessage() for r in caplog.records if "neither None" in r.getMessage()]
    assert len(warnings) == 1 and "True" in warnings[0] and "RECONSUME_LATER" in warnings[0]
    assert calls == 3  # retried in this process after the two unreadable answers


async def test_an_orderly_suspend_is_clamped_to_thirty_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listener asking for an hour's suspend is tried again after SUSPEND_MAX_S (30 s as
    Java; shortened here), never left for the hour."""
    monkeypatch.setattr(orderly, "SUSPEND_MAX_S", 0.2)
    calls = 0

    async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> OrderlyResult:
        nonlocal calls
        calls += 1
        ctx.suspend_time = 3600.0
        return OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT if calls == 1 else OrderlyResult.SUCCESS

    commits = Commits()
    service = OrderlyConsumeService(
        listener,
        instance=None,  # type: ignore[arg-type]
        group="g",
        workers=1,
        batch_max=1,
        max_reconsume_times=None,
        redelivery=None,
        consumed=commits,
        use_broker_locks=False,
    )
    service.start()
    mq, pq = QUEUES[0], ProcessQueue(FlowLimits(max_span=None))
    service.submit(mq, pq, pq.put(batch(mq, 0, 1)))
    await asyncio.wait_for(commits.wait_for({mq: 1}), 5)
    await service.stop(5)
    assert calls == 2
    assert orderly.clamp_suspend(0) == orderly.SUSPEND_MIN_S == 0.01
