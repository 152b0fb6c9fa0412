"""Orderly consumption: each queue's messages reach the listener one batch at a time, in order.

Scheduling (the invariant "never two workers on one queue"): a queue with messages to consume
is in `_scheduled` from the moment it is put on the ready queue until a worker finds nothing
left to do for it; while scheduled it is never put on the ready queue again, and a worker that
takes it off consumes one batch, then puts it back at the tail (so busy queues share the
workers fairly) or, when suspended, after `suspend_time` by timer — still scheduled meanwhile.
So at any moment a queue is either waiting in the ready queue, waiting on its timer, or held
by exactly one worker.

Broker locks (clustering only): a queue is consumed — and pulled (`holds_lock`, the pull loop's
gate) — only while this client holds the broker's lock on it (LOCK_BATCH_MQ). The lock is taken
before the queue's first pull (so its start offset is read after the previous owner committed
and unlocked), renewed for every owned queue every `lock_interval` (20 s), and considered stale
`lock_max_age` (30 s) after the last renewal the broker confirmed (the broker keeps it 60 s).
`locked` is set from the broker's reply itself (RocketMQ #2621: a flag set only by the periodic
renewal stalls new queues 20 s). A released queue is committed first and unlocked after.

Failures (SUSPEND_CURRENT_QUEUE_A_MOMENT or an exception): the batch goes back to the head of
its queue with reconsume counts raised and is tried again after `suspend_time` (the
context's, clamped to 10 ms - 30 s as Java does); a message that
reached `max_reconsume_times` (None: never, as RocketMQ's orderly default) is sent to the
group's dead-letter queue instead and the queue moves on.

Consume timeout: as in Java, an orderly batch is never expired — sending it back, or letting
another member take the queue, would break the order the listener is promised — but a call
running past `consume_timeout` is not silent either: it is logged as a warning, naming the
queue and the batch's first offset, once per `consume_timeout` it keeps running, and counted
in `overrun_calls`, so a queue stuck behind a hung listener shows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Unpack

from longboat.client._internal.instance import ClientInstance
from longboat.client.consume.process_queue import ProcessQueue
from longboat.client.push.listener import (
    ConsumeServiceOptions,
    OrderlyContext,
    OrderlyListener,
    OrderlyResult,
    WorkerPool,
)
from longboat.client.push.redelivery import DEAD_LETTER
from longboat.client.rebalance.locks import RENEW_INTERVAL_S, RETRY_S, lock_queues, unlock_queues
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

# A suspended queue is tried again after 10 ms at least and 30 s at most, whatever the
# setting or the listener's context says (Java's submitConsumeRequestLater).
SUSPEND_MIN_S = 0.01
SUSPEND_MAX_S = 30.0


def clamp_suspend(seconds: float) -> float:
    return min(SUSPEND_MAX_S, max(SUSPEND_MIN_S, seconds))


class OrderlyConsumeService(WorkerPool[MessageQueue]):
    def __init__(
        self,
        listener: OrderlyListener,
        *,
        instance: ClientInstance,
        group: str,
        max_reconsume_times: int | None,
        use_broker_locks: bool,
        suspend_time: float = 1.0,
        lock_interval: float = RENEW_INTERVAL_S,
        lock_max_age: float = 30.0,
        lock_retry: float = RETRY_S,
        clock: Callable[[], float] = time.monotonic,
        **options: Unpack[ConsumeServiceOptions],
    ) -> None:
        super().__init__(listener, OrderlyResult, "longboat-orderly", options)
        self.instance = instance
        self.group = group
        self.max_reconsume_times = max_reconsume_times
        self.use_broker_locks = use_broker_locks
        self.suspend_time = suspend_time
        self.lock_interval = lock_interval
        self.lock_max_age = lock_max_age
        self.lock_retry = lock_retry
        self.clock = clock
        self._queues: dict[MessageQueue, ProcessQueue] = {}
        self._scheduled: set[MessageQueue] = set()
        self.suspended = 0
        self.dead_lettered = 0
        # Listener calls running now: when each started, and the offset its batch starts at.
        self._running: dict[MessageQueue, tuple[float, int]] = {}
        self.overrun_calls = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(), name=f"orderly worker {i}")
            for i in range(self.workers)
        ]
        if self.use_broker_locks:
            self._tasks.append(asyncio.create_task(self._renew_locks(), name="orderly locks"))
        self._tasks.append(asyncio.create_task(self._watch_overruns(), name="orderly timeouts"))

    async def _watch_overruns(self) -> None:
        """Warn about calls running past `consume_timeout` (see the module docstring)."""
        period = max(0.05, min(60.0, self.consume_timeout / 4))
        warned: dict[tuple[MessageQueue, float], int] = {}
        while True:
            await asyncio.sleep(period)
            now = self.clock()
            for key in [k for k in warned if self._running.get(k[0], (None,))[0] != k[1]]:
                del warned[key]  # that call has ended
            for mq, (started, offset) in list(self._running.items()):
                periods = int((now - started) // self.consume_timeout)
                if periods < 1 or warned.get((mq, started), 0) >= periods:
                    continue
                if (mq, started) not in warned:
                    self.overrun_calls += 1
                warned[(mq, started)] = periods
                log.warning(
                    "orderly listener has run %.0f s (consume_timeout %.0f s) on the batch at "
                    "offset %d of %s; the queue waits for it (an orderly batch is never sent "
                    "back)",
                    now - started,
                    self.consume_timeout,
                    offset,
                    mq,
                )

    # ------------------------------------------------------------------ queues

    async def acquire(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        """Before the queue's first pull: hold its broker lock (retrying until we do)."""
        self._queues[mq] = pq
        if not self.use_broker_locks:
            return
        while mq not in await self.lock([mq]):
            await asyncio.sleep(self.lock_retry)

    def holds_lock(self, pq: ProcessQueue) -> bool:
        """The queue may be pulled: its broker lock is held and fresh (always, without
        broker locks)."""
        return not self.use_broker_locks or not pq.lock_expired(self.clock(), self.lock_max_age)

    async def release(self, mq: MessageQueue) -> None:
        """After the queue's offset was committed: give the broker lock back."""
        pq = self._queues.pop(mq, None)
        self._scheduled.discard(mq)
        if not self.use_broker_locks or pq is None or not pq.locked:
            return
        pq.locked = False
        await unlock_queues(self.instance, self.group, [mq])

    async def lock(self, mqs: list[MessageQueue]) -> set[MessageQueue]:
        """LOCK_BATCH_MQ per broker; marks what the broker granted, unmarks the rest."""
        granted = await lock_queues(self.instance, self.group, mqs)
        now = self.clock()
        for mq in mqs:
            pq = self._queues.get(mq)
            if pq is None:
                continue
            if mq in granted:
                pq.mark_locked(now)
            elif pq.locked:
                log.warning("lost the broker lock on %s for %s", mq, self.group)
                pq.locked = False
        return granted

    async def _renew_locks(self) -> None:
        while True:
            await asyncio.sleep(self.lock_interval)
            owned = [mq for mq, pq in self._queues.items() if not pq.dropped]
            if owned:
                await self.lock(owned)

    # ------------------------------------------------------------------ consuming

    def submit(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        self._queues.setdefault(mq, pq)
        self._schedule(mq)

    def _schedule(self, mq: MessageQueue) -> None:
        if mq not in self._scheduled:
            self._scheduled.add(mq)
            self._pending.put_nowait(mq)

    def _later(self, mq: MessageQueue, delay: float) -> None:
        """Put a (still scheduled) queue back on the ready queue after `delay`."""

        def fire() -> None:
            self._timers.discard(timer)
            if mq in self._scheduled:
                self._pending.put_nowait(mq)

        timer = asyncio.get_running_loop().call_later(delay, fire)
        self._timers.add(timer)

    async def _work(self) -> None:
        while True:
            mq = await self._pending.get()
            pq = self._queues.get(mq)
            if pq is None or pq.dropped or self._results.error:
                self._scheduled.discard(mq)
                continue
            if (
                self.use_broker_locks
                and pq.lock_expired(self.clock(), self.lock_max_age)
                and mq not in await self.lock([mq])
            ):
                self._later(mq, self.lock_retry)
                continue
            self.inflight.begin(mq)
            try:
                delay = await self._consume_batch(mq, pq)
            except Exception:
                log.exception("orderly consumption of %s failed unexpectedly", mq)
                delay = clamp_suspend(self.suspend_time)
            finally:
                self.inflight.end(mq)
            if delay is not None:
                self._later(mq, delay)
            elif pq.count and not pq.dropped:
                self._pending.put_nowait(mq)
            else:
                self._scheduled.discard(mq)

    async def _consume_batch(self, mq: MessageQueue, pq: ProcessQueue) -> float | None:
        """Consume one batch; returns the delay before the queue's next turn (None: now)."""
        msgs = pq.take(self.batch_max)
        if not msgs:
            return None
        context = OrderlyContext(mq, suspend_time=self.suspend_time)
        self._running[mq] = (self.clock(), msgs[0].queue_offset)
        try:
            result = await self._verdict(msgs, context, f"of {mq} at offset {msgs[0].queue_offset}")
        finally:
            del self._running[mq]
        if result is None:
            pq.give_back()  # uncommitted, delivered again after a fix
            return None
        if pq.dropped:
            pq.give_back()
            return None
        if result is OrderlyResult.SUCCESS:
            self._consumed(mq, pq, pq.commit())
            return None
        retry = await self._dead_letter_exhausted(mq, msgs, context)
        self._consumed(mq, pq, pq.give_back(retry))
        if not retry:
            return None
        for msg in retry:
            msg.reconsume_times += 1
        self.suspended += 1
        return clamp_suspend(context.suspend_time)

    async def _dead_letter_exhausted(
        self, mq: MessageQueue, msgs: list[MessageExt], context: OrderlyContext
    ) -> list[MessageExt]:
        """Send messages past the maximum to the DLQ; returns the ones to retry."""
        limit = self.max_reconsume_times
        if limit is None:
            return msgs
        retry = []
        for msg in msgs:
            if msg.reconsume_times < limit:
                retry.append(msg)
            elif self.redelivery is not None and await self.redelivery.redeliver(
                mq, msg, DEAD_LETTER, limit, reason=context.reason_for(msg)
            ):
                self.dead_lettered += 1
            elif self.redelivery is None:
                log.error("dropping %s of %s after %d attempts", msg.msg_id, mq, limit)
            else:
                retry.append(msg)
        return retry
