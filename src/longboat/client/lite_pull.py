"""The lite pull consumer: the application calls `poll()`; pulling happens underneath.

Built on the push consumer's parts: each owned queue has a `ProcessQueue` (what was pulled
and not yet polled, flow control) fed by a `PullLoop` (long polls held up to
`broker_suspend_timeout`, back-off after errors); after `subscribe()` the `RebalanceService`
decides which queues this member owns (jittered timer, one rebalance at a time, waiting for
our heartbeat to reach the broker) and calls `add_queues` / `drop_queues` here; `assign()`
names the queues instead, without rebalancing.  `poll()` hands buffered batches to the
application one queue at a time, round robin.

Per-queue state and its invariants (`_Queue`):

* `batches` holds the pulled batches not yet polled, in offset order; the process queue holds
  the same messages (so its count drives flow control).
* `position` is the next offset the application has not been given: every message before it
  was returned by `poll()` (the process queue's committed offset once a batch is polled).
  `commit()` stores positions on the broker, so a restarted consumer resumes after the last
  committed position (at-least-once: what was polled but not committed is delivered again).
* `seek()` stops the queue's pull loop and replaces its process queue and batches before
  moving the position, so no batch pulled from the old offset can reach the application.
* With `subscribe()`, a queue is handed over between members in order: this member holds
  the broker's lock on each queue it owns (taken before the start offset is read, renewed
  every 20 s) and, dropping one, commits its position before it unlocks.  The old and the new
  owner act on the member list at different moments — the new one may add the queue while
  the old one still polls it — so without the lock the new owner could read the offset before
  the old one's commit and deliver again what was polled (Java's lite pull consumer does).
  Commits, lock renewals and unlocks go to the broker one at a time (`_broker_writes`), so
  none begun before a drop lands after it: no auto commit of an older position after the
  drop's commit, no renewal locking the queue again after its unlock.  The cost: a crashed
  member's queues wait until its locks lapse at the broker (60 s) before another member
  takes them.
* A pull loop waits (no request in flight) while its queue is paused or holds
  `pull_threshold_for_queue` messages, or all queues together `pull_threshold_for_all`
  (its `gate` is cleared); `poll()` and `resume()` open it again.  Paused queues' batches
  stay held, not returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, Unpack

from longboat.client._internal.instance import ClientInstance
from longboat.client.config import ClientConfig
from longboat.client.consume.group_consumer import GroupConsumer
from longboat.client.consume.process_queue import FlowLimits, ProcessQueue
from longboat.client.consume.pull_loop import PullLoop, Subscription
from longboat.client.consume_from import (
    ConsumeFrom,
    committed_offset,
    initial_offset,
    offset_for,
)
from longboat.client.consumer_settings import LitePullOptions, LitePullSettings
from longboat.client.errors import ClientError, ClientUsageError, NoRouteError
from longboat.client.lifecycle import LEFT_OPEN_UNCOMMITTED
from longboat.client.rebalance.locks import (
    RENEW_INTERVAL_S,
    RETRY_S,
    lock_queues,
    unlock_queues,
)
from longboat.client.rebalance.service import RebalanceService
from longboat.client.tasks import ended
from longboat.protocol.bodies import ConsumerData
from longboat.protocol.message import MessageExt
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

# How long one step of `async for` waits before checking whether the consumer was shut down.
ITERATION_POLL = 1.0
_ALL = Subscription(TagExpression.parse("*"), 0)


@dataclass(eq=False)
class _Queue:
    mq: MessageQueue
    pq: ProcessQueue
    pull: PullLoop
    gate: asyncio.Event
    batches: deque[list[MessageExt]] = field(default_factory=deque)
    position: int | None = None
    committed: int | None = None
    paused: bool = False


class LitePullConsumer(GroupConsumer[LitePullSettings]):
    """Pull-style consumer of one group: `poll()` for messages, `commit()` to record progress."""

    left_open_consequence = LEFT_OPEN_UNCOMMITTED

    def __init__(
        self,
        group: str,
        settings: LitePullSettings | None = None,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        **options: Unpack[LitePullOptions],
    ) -> None:
        """`settings`, or its fields as keyword arguments (see `GroupConsumer`)."""
        super().__init__(group, settings or LitePullSettings(), options, config, namesrv_addrs)
        self._assigned: list[MessageQueue] | None = None
        self._queues: dict[MessageQueue, _Queue] = {}
        self._arrival = asyncio.Event()
        self._rebalance: RebalanceService | None = None
        self._lock_renewal: asyncio.Task[None] | None = None
        self._broker_writes = asyncio.Lock()
        self._next_auto_commit = 0.0
        self._poll_cursor = 0
        self._background: set[asyncio.Task[None]] = set()
        # `async for`: the rest of the batch being handed out, and where it came from.
        self._pending: deque[MessageExt] = deque()
        self._pending_of: tuple[_Queue, list[MessageExt], int | None] | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._instance is not None:
            return
        instance = ClientInstance.acquire(self.config, consumer_group=self.group)
        self._instance = instance
        instance.register_consumer(self)
        self._next_auto_commit = time.monotonic() + self.settings.auto_commit_interval
        try:
            for topic in self._subscriptions:
                await instance.route(topic)
            # Assigned queues are routed at their first pull; the name server is asked now all
            # the same, so an address that is no name server fails here and not in poll().
            for topic in sorted({mq.topic for mq in self._assigned or ()}):
                with contextlib.suppress(NoRouteError):
                    await instance.route(topic)
            await instance.heartbeat_all()
            if self._assigned is not None:
                self._apply_assignment(set(self._assigned))
            else:
                self._rebalance = RebalanceService(
                    instance,
                    self.group,
                    self,
                    self.settings.allocate,
                    broadcasting=False,
                    interval=self.settings.rebalance_interval,
                )
                instance.route_listeners.append(self._rebalance.on_route_changed)
                self._lock_renewal = asyncio.create_task(
                    self._renew_locks(), name=f"lock renewal {self.group}"
                )
                await self._rebalance.start()
        except BaseException:
            await self.shutdown()
            raise

    async def shutdown(self) -> None:
        """Stop pulling, commit positions (with auto commit), unregister, release."""
        instance = self._instance
        if instance is None:
            return
        if self._rebalance is not None:
            await self._rebalance.stop()
            with contextlib.suppress(ValueError):
                instance.route_listeners.remove(self._rebalance.on_route_changed)
            self._rebalance = None
        if self._lock_renewal is not None:
            self._lock_renewal.cancel()
            await ended(self._lock_renewal)
            self._lock_renewal = None
        queues, self._queues = list(self._queues.values()), {}
        await self._close(queues)
        for task in list(self._background):
            with contextlib.suppress(Exception):
                await ended(task)
        self._instance = None
        self._arrival.set()  # a poll or an `async for` waiting returns now
        await instance.unregister_consumer(self.group)
        await instance.release()

    def __repr__(self) -> str:
        return f"LitePullConsumer({self.group})"

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    # ------------------------------------------------------------------ what to consume

    def subscribe(self, topic: str, expression: str = "*", *, sql: str | None = None) -> None:
        """Consume `topic` (messages whose tag matches `expression`, or whose properties
        match the SQL92 selector `sql`) with group rebalancing."""
        if self._assigned is not None:
            raise ClientUsageError("subscribe() and assign() cannot be mixed on one consumer")
        self._subscriptions[topic] = Subscription.of(expression, sql=sql)
        self._subscriptions_changed()

    def unsubscribe(self, topic: str) -> None:
        if self._subscriptions.pop(topic, None) is not None:
            self._subscriptions_changed()

    def _subscriptions_changed(self) -> None:
        if self._instance is not None:
            self._instance.request_heartbeat()
        if self._rebalance is not None:
            self._rebalance.request()

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues, without group rebalancing."""
        if self._subscriptions:
            raise ClientUsageError("subscribe() and assign() cannot be mixed on one consumer")
        self._assigned = sorted(set(queues))
        if self._instance is not None:
            self._apply_assignment(set(self._assigned))

    def assignment(self) -> set[MessageQueue]:
        return set(self._queues)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues (for `assign`)."""
        return list((await self.instance.route(topic)).subscribe_queues)

    # ------------------------------------------------------------------ polling

    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of messages of one queue, in offset order; [] after `timeout` s."""
        taken = await self._next_batch(timeout)
        if taken is None:
            return []
        q, batch, after = taken
        q.position = after
        return batch

    async def getmany(
        self, timeout: float = 5.0, max_records: int | None = None
    ) -> dict[MessageQueue, list[MessageExt]]:
        """What is buffered, by queue, each in offset order: waits up to `timeout` s for the
        first batch, then takes every ready batch (up to about `max_records` messages, whole
        batches); {} after `timeout` with nothing."""
        out: dict[MessageQueue, list[MessageExt]] = {}
        count, wait = 0, timeout
        while max_records is None or count < max_records:
            taken = await self._next_batch(wait)
            if taken is None:
                break
            q, batch, after = taken
            q.position = after
            out.setdefault(q.mq, []).extend(batch)
            count += len(batch)
            wait = 0
        return out

    # `async for msg in consumer`: messages one by one, until the consumer is shut down (from
    # another task) or the loop is left.  The position follows each message handed out, so
    # a commit (auto or explicit) never covers one the loop has not seen.

    def __aiter__(self) -> LitePullConsumer:
        return self

    async def __anext__(self) -> MessageExt:
        while not self._pending:
            if self._instance is None:
                raise StopAsyncIteration
            taken = await self._next_batch(ITERATION_POLL)
            if taken is not None:
                self._pending_of = taken
                self._pending.extend(taken[1])
        assert self._pending_of is not None
        q, _, after = self._pending_of
        msg = self._pending.popleft()
        if self._queues.get(q.mq) is q:
            q.position = after if not self._pending else msg.queue_offset + 1
        return msg

    async def _next_batch(
        self, timeout: float
    ) -> tuple[_Queue, list[MessageExt], int | None] | None:
        """The next buffered batch, its queue and the position after it; None after
        `timeout` s, or at once when shut down meanwhile."""
        self.instance  # noqa: B018 - raises when not started
        if self._pending and self._pending_of is not None:
            # The rest of a batch an `async for` left (break): handed out first.
            rest, self._pending = list(self._pending), deque()
            return self._pending_of[0], rest, self._pending_of[2]
        if self.settings.auto_commit and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + self.settings.auto_commit_interval
            self._spawn(self._commit_queues(list(self._queues.values()), quiet=True))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            taken = self._take_batch()
            if taken is not None:
                return taken
            remaining = deadline - loop.time()
            if remaining <= 0 or self._instance is None:
                return None
            self._arrival.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._arrival.wait()

    def _take_batch(self) -> tuple[_Queue, list[MessageExt], int | None] | None:
        queues = list(self._queues.values())
        for i in range(len(queues)):
            q = queues[(self._poll_cursor + i) % len(queues)]
            if q.paused or not q.batches:
                continue
            self._poll_cursor = (self._poll_cursor + i + 1) % len(queues)
            batch = q.batches.popleft()
            after = q.pq.remove(batch)
            q.pull.wake()
            self._open_gates()
            return q, batch, after
        return None

    def _open_gates(self) -> None:
        """Let each queue's pull loop go unless paused or all queues together are full."""
        full = sum(q.pq.count for q in self._queues.values()) >= (
            self.settings.pull_threshold_for_all
        )
        for q in self._queues.values():
            if q.paused or full:
                q.gate.clear()
            else:
                q.gate.set()

    # ------------------------------------------------------------------ positions

    def _queue(self, mq: MessageQueue) -> _Queue:
        q = self._queues.get(mq)
        if q is None:
            raise ClientUsageError(f"{mq} is not assigned to this consumer")
        return q

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Consume `mq` from `offset` on; it must lie within the queue's [min, max]."""
        self._queue(mq)
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        low = await self.instance.api.get_min_offset(addr, mq)
        high = await self.instance.api.get_max_offset(addr, mq)
        if not low <= offset <= high:
            raise ClientUsageError(f"offset {offset} is outside [{low}, {high}] of {mq}")
        await self._move(mq, offset)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self._seek_to(mq, ConsumeFrom.FIRST_OFFSET)

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self._seek_to(mq, ConsumeFrom.LAST_OFFSET)

    async def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        """Consume `mq` from the first message stored at or after `timestamp_ms`."""
        await self._seek_to(mq, ConsumeFrom.TIMESTAMP, timestamp_ms)

    async def _seek_to(
        self, mq: MessageQueue, where: ConsumeFrom, timestamp_ms: int | None = None
    ) -> None:
        self._queue(mq)
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        # Not offset_for's retry-topic rule: a seek to the end means the end.
        if where is ConsumeFrom.LAST_OFFSET:
            offset = await self.instance.api.get_max_offset(addr, mq)
        else:
            offset = await offset_for(self.instance.api, addr, mq, where, timestamp_ms)
        await self._move(mq, offset)

    async def _move(self, mq: MessageQueue, offset: int) -> None:
        old = self._queue(mq)
        old.pq.dropped = True
        await old.pull.stop()
        if self._queues.get(mq) is not old:
            return  # dropped (or moved again) meanwhile

        async def at_offset() -> int:
            return offset

        q = self._open(mq, at_offset)
        q.position, q.committed, q.paused = offset, old.committed, old.paused
        self._open_gates()

    async def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Store positions on the broker now and wait for it to confirm.

        Without `offsets`, the position of every owned queue (all polled messages count as
        consumed); with `offsets`, exactly those (the next offset to consume per queue)."""
        if offsets is None:
            await self._commit_queues(list(self._queues.values()), quiet=False)
            return
        for mq, offset in offsets.items():
            await self._commit_one(mq, offset)
            if (q := self._queues.get(mq)) is not None:
                q.committed = offset

    async def committed(self, mq: MessageQueue) -> int | None:
        """The group's offset for `mq` stored on the broker, None if it has none."""
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        return await committed_offset(self.instance.api, addr, self.group, mq)

    def process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        """The owned queues and their process queues (what is buffered; a snapshot)."""
        return {mq: q.pq for mq, q in self._queues.items()}

    def position(self, mq: MessageQueue) -> int | None:
        """The next offset `poll()` will return for `mq` (None until known)."""
        return self._queue(mq).position

    async def _commit_one(self, mq: MessageQueue, offset: int) -> None:
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        await self.instance.api.update_consumer_offset(addr, self.group, mq, offset)

    async def _commit_queues(self, queues: list[_Queue], *, quiet: bool) -> None:
        async with self._broker_writes:
            for q in queues:
                offset = q.position
                if offset is None or offset == q.committed:
                    continue
                try:
                    await self._commit_one(q.mq, offset)
                except ClientError as exc:
                    if not quiet:
                        raise
                    log.warning("committing %s at %d failed: %s", q.mq, offset, exc)
                    continue
                q.committed = offset

    # ------------------------------------------------------------------ pause / resume

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling these queues and hold back what is buffered, until `resume`."""
        for mq in queues:
            self._queue(mq).paused = True
        self._open_gates()

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for mq in queues:
            self._queue(mq).paused = False
        self._open_gates()
        self._arrival.set()

    # ------------------------------------------------------------------ queues

    def _open(self, mq: MessageQueue, start_offset: Callable[[], Awaitable[int]]) -> _Queue:
        """Own `mq` and start pulling it from `start_offset()`."""
        pq = ProcessQueue(
            FlowLimits(max_count=self.settings.pull_threshold_for_queue, max_span=None)
        )
        gate = asyncio.Event()
        q = _Queue(
            mq,
            pq,
            PullLoop(
                self.instance,
                self.group,
                mq,
                pq,
                self._subscriptions.get(mq.topic, _ALL),
                self.pull_settings,
                start_offset=start_offset,
                deliver=self._deliver,
                offset_moved=self._offset_moved,
                commit_offset=None,
                running=gate,
            ),
            gate,
        )
        self._queues[mq] = q
        self._open_gates()
        q.pull.start()
        return q

    def _open_stored(self, mq: MessageQueue) -> None:
        """Own `mq` from the group's committed offset, else `consume_from`."""

        async def start_offset() -> int:
            if self._assigned is None:
                # The previous owner unlocks only after committing (see the module docstring).
                while mq not in await lock_queues(self.instance, self.group, [mq]):
                    await asyncio.sleep(RETRY_S)
            addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
            offset = await initial_offset(
                self.instance.api,
                addr,
                self.group,
                mq,
                self.settings.consume_from,
                self.settings.consume_timestamp_ms,
            )
            if (q := self._queues.get(mq)) is not None and q.position is None:
                q.position = offset
            return offset

        self._open(mq, start_offset)

    async def _close(self, queues: list[_Queue]) -> None:
        """Stop pulling `queues` (no longer in `_queues`), commit their positions and, with
        `subscribe()`, only then unlock them for the next owner."""
        for q in queues:
            q.pq.dropped = True
        await asyncio.gather(*(q.pull.stop() for q in queues))
        if self.settings.auto_commit:
            await self._commit_queues(queues, quiet=True)
        if self._assigned is None and queues:
            async with self._broker_writes:
                await unlock_queues(self.instance, self.group, [q.mq for q in queues])

    async def _renew_locks(self) -> None:
        """Keep the broker locks of the owned queues from lapsing (see the module
        docstring); a lost one is only logged: the queue stays owned until a rebalance
        moves it."""
        while True:
            await asyncio.sleep(RENEW_INTERVAL_S)
            async with self._broker_writes:
                # Queues still waiting for their lock (not started) are not reported lost.
                started = [mq for mq, q in self._queues.items() if q.pull.next_offset is not None]
                granted = await lock_queues(self.instance, self.group, started)
            for mq in sorted(set(started) - granted):
                log.warning("%s: lost the broker lock on %s", self, mq)

    def _deliver(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        q = self._queues.get(mq)
        if q is None or q.pq is not pq:
            return  # pulled for a queue since dropped or moved by a seek
        q.batches.append(msgs)
        self._open_gates()
        self._arrival.set()

    def _offset_moved(self, mq: MessageQueue, offset: int) -> None:
        # OFFSET_ILLEGAL with nothing buffered: the position follows the broker's offset.
        if (q := self._queues.get(mq)) is not None:
            q.position = offset

    def _apply_assignment(self, wanted: set[MessageQueue]) -> None:
        gone = [self._queues.pop(mq) for mq in list(self._queues) if mq not in wanted]
        if gone:
            self._spawn(self._close(gone))
        for mq in sorted(wanted - set(self._queues)):
            self._open_stored(mq)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ for the client instance

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model="CLUSTERING",
            consume_from_where=self.settings.consume_from.value,
            subscription_data_set=[
                sub.data(topic) for topic, sub in sorted(self._subscriptions.items())
            ],
        )

    def on_consumer_ids_changed(self) -> None:
        if self._rebalance is not None:
            self._rebalance.request()

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """Ignored, as Java's lite pull consumer ignores it: positions are the application's
        (`seek`)."""
        log.info("%s: ignoring a broker's offset reset of %s (use seek)", self, topic)

    # ------------------------------------------------------------------ for the rebalance

    async def rebalance(self) -> None:
        """Rebalance now (normally automatic; nothing to do with `assign`)."""
        if self._rebalance is not None:
            await self._rebalance.rebalance()

    def topics(self) -> list[str]:
        return sorted(self._subscriptions)

    def owned(self) -> set[MessageQueue]:
        return set(self._queues) if self._assigned is None else set()

    async def add_queues(self, mqs: list[MessageQueue]) -> None:
        for mq in mqs:
            self._open_stored(mq)

    async def drop_queues(self, mqs: list[MessageQueue]) -> None:
        await self._close([q for mq in mqs if (q := self._queues.pop(mq, None)) is not None])
