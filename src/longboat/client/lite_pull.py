"""The lite pull consumer: the application calls `poll()`; pulling happens underneath.

Each owned queue has one pull task that long-polls the broker (suspend 20 s, RPC timeout
30 s, as Java's `DefaultLitePullConsumer`) and buffers what it gets; `poll()` hands buffered
batches to the application one queue at a time, round robin.  Queues come from `assign()`
or, after `subscribe()`, from rebalancing the group (on start, on NOTIFY_CONSUMER_IDS_CHANGED,
on route changes and every `rebalance_interval`).

Per-queue state and its invariants (`_QueueState`):

* `buffer` holds consecutive pulled batches in offset order; `pull_offset` is past all of them.
* `position` is the next offset the application has not been given: every message before it
  was returned by `poll()`.  `commit()` stores positions on the broker, so a restarted
  consumer resumes after the last committed position (at-least-once: what was polled but not
  committed is delivered again).
* `seek()` cancels the queue's pull task and empties its buffer before moving both offsets,
  so no batch pulled from the old offset can reach the application afterwards.
* A pull task waits (no request in flight) while its queue is paused or the cache is over
  `pull_threshold_for_queue` messages, or all queues together over `pull_threshold_for_all`;
  `poll()` and `resume()` wake it.  Paused queues' buffered batches stay held, not returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any

from longboat.client.api import PullStatus
from longboat.client.config import ClientConfig
from longboat.client.consume_from import (
    ConsumeFrom,
    committed_offset,
    initial_offset,
    offset_for,
)
from longboat.client.errors import (
    BrokerBusyError,
    ClientError,
    ClientUsageError,
)
from longboat.client.instance import ClientInstance
from longboat.client.lifecycle import InstanceUser
from longboat.client.rebalance.allocate import AllocateStrategy, allocate_averagely
from longboat.client.route import TopicRoute
from longboat.client.tasks import ended
from longboat.protocol.bodies import ConsumerData, SubscriptionData
from longboat.protocol.headers import PullMessageRequestHeader
from longboat.protocol.message import MessageExt
from longboat.protocol.sysflags import PullSysFlag
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

# Suspend + subscription + lite-pull: the subscription travels with every pull, so pulls do
# not depend on the heartbeat having reached the broker; commits go separately.
_PULL_SYS_FLAG = PullSysFlag.build(
    commit_offset=False, suspend=True, subscription=True, lite_pull=True
)
_BACKOFF_ON_ERROR = 1.0
_BACKOFF_ON_BUSY = 0.05


@dataclass(eq=False)
class _QueueState:
    mq: MessageQueue
    expression: TagExpression
    sub_version: int
    pull_offset: int | None = None
    position: int | None = None
    committed: int | None = None
    buffer: deque[list[MessageExt]] = field(default_factory=deque)
    cached: int = 0
    paused: bool = False
    room: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


@dataclass(frozen=True, slots=True)
class _Subscription:
    expression: TagExpression
    version: int


class LitePullConsumer(InstanceUser):
    """Pull-style consumer of one group: `poll()` for messages, `commit()` to record progress."""

    def __init__(
        self,
        group: str,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        pull_batch_size: int = 10,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        allocate: AllocateStrategy = allocate_averagely,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_for_all: int = 10_000,
        broker_suspend_timeout: float = 20.0,
        pull_timeout: float = 30.0,
        rebalance_interval: float = 20.0,
    ) -> None:
        super().__init__(config, namesrv_addrs)
        if pull_timeout <= broker_suspend_timeout:
            raise ClientUsageError(
                "pull_timeout must exceed broker_suspend_timeout, or held pulls time out"
            )
        self.group = group
        self.pull_batch_size = pull_batch_size
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.consume_from = consume_from
        self.consume_timestamp_ms = consume_timestamp_ms
        self.allocate = allocate
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_for_all = pull_threshold_for_all
        self.broker_suspend_timeout = broker_suspend_timeout
        self.pull_timeout = pull_timeout
        self.rebalance_interval = rebalance_interval
        self._subscriptions: dict[str, _Subscription] = {}
        self._assigned: list[MessageQueue] | None = None
        self._states: dict[MessageQueue, _QueueState] = {}
        self._arrival = asyncio.Event()
        self._rebalance_wanted = asyncio.Event()
        self._rebalance_task: asyncio.Task[None] | None = None
        self._next_auto_commit = 0.0
        self._poll_cursor = 0
        self._background: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._instance is not None:
            return
        instance = ClientInstance.acquire(self.config, consumer_group=self.group)
        self._instance = instance
        instance.register_consumer(self)
        instance.route_listeners.append(self._on_route_changed)
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval
        try:
            for topic in self._subscriptions:
                await instance.route(topic)
            await instance.heartbeat_all()
            if self._subscriptions:
                await self.rebalance()
                self._rebalance_task = asyncio.create_task(self._rebalance_loop())
            elif self._assigned is not None:
                self._apply_assignment(set(self._assigned))
        except BaseException:
            await self.shutdown()
            raise

    async def shutdown(self) -> None:
        """Stop pulling, commit positions (with auto commit), unregister, release."""
        instance = self._instance
        if instance is None:
            return
        if self._rebalance_task is not None:
            self._rebalance_task.cancel()
            await ended(self._rebalance_task)
            self._rebalance_task = None
        await self._stop_pulling(list(self._states.values()))
        if self.auto_commit:
            await self._commit_states(list(self._states.values()), quiet=True)
        for task in list(self._background):
            with contextlib.suppress(Exception):
                await ended(task)
        self._states.clear()
        with contextlib.suppress(ValueError):
            instance.route_listeners.remove(self._on_route_changed)
        self._instance = None
        await instance.unregister_consumer(self.group)
        await instance.release()

    def __repr__(self) -> str:
        return f"LitePullConsumer({self.group})"

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    # ------------------------------------------------------------------ what to consume

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Consume `topic` (messages whose tag matches `expression`) with group rebalancing."""
        if self._assigned is not None:
            raise ClientUsageError("subscribe() and assign() cannot be mixed on one consumer")
        self._subscriptions[topic] = _Subscription(
            TagExpression.parse(expression), int(time.time() * 1000)
        )
        if self._instance is not None:
            self._instance.request_heartbeat()
            self._rebalance_wanted.set()
            if self._rebalance_task is None:
                self._rebalance_task = asyncio.create_task(self._rebalance_loop())

    def unsubscribe(self, topic: str) -> None:
        if self._subscriptions.pop(topic, None) is not None and self._instance is not None:
            self._instance.request_heartbeat()
            self._rebalance_wanted.set()

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues, without group rebalancing."""
        if self._subscriptions:
            raise ClientUsageError("subscribe() and assign() cannot be mixed on one consumer")
        self._assigned = sorted(set(queues))
        if self._instance is not None:
            self._apply_assignment(set(self._assigned))

    def assignment(self) -> set[MessageQueue]:
        return set(self._states)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues (for `assign`)."""
        return list((await self.instance.route(topic)).subscribe_queues)

    # ------------------------------------------------------------------ polling

    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of messages of one queue, in offset order; [] after `timeout` s."""
        self.instance  # noqa: B018 - raises when not started
        if self.auto_commit and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + self.auto_commit_interval
            self._spawn(self._commit_states(list(self._states.values()), quiet=True))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            batch = self._take_batch()
            if batch is not None:
                return batch
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            self._arrival.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._arrival.wait()

    def _take_batch(self) -> list[MessageExt] | None:
        states = list(self._states.values())
        for i in range(len(states)):
            state = states[(self._poll_cursor + i) % len(states)]
            if state.paused or not state.buffer:
                continue
            self._poll_cursor = (self._poll_cursor + i + 1) % len(states)
            batch = state.buffer.popleft()
            state.cached -= len(batch)
            state.position = batch[-1].queue_offset + 1
            self._wake_pullers()
            return batch
        return None

    def _has_room(self, state: _QueueState) -> bool:
        if state.paused or state.cached >= self.pull_threshold_for_queue:
            return False
        return sum(s.cached for s in self._states.values()) < self.pull_threshold_for_all

    def _wake_pullers(self) -> None:
        for state in self._states.values():
            if not state.room.is_set() and self._has_room(state):
                state.room.set()

    # ------------------------------------------------------------------ positions

    def _state(self, mq: MessageQueue) -> _QueueState:
        state = self._states.get(mq)
        if state is None:
            raise ClientUsageError(f"{mq} is not assigned to this consumer")
        return state

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Consume `mq` from `offset` on; it must lie within the queue's [min, max]."""
        state = self._state(mq)
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        low = await self.instance.api.get_min_offset(addr, mq)
        high = await self.instance.api.get_max_offset(addr, mq)
        if not low <= offset <= high:
            raise ClientUsageError(f"offset {offset} is outside [{low}, {high}] of {mq}")
        await self._move(state, offset)

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
        state = self._state(mq)
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        # Not offset_for's retry-topic rule: a seek to the end means the end.
        if where is ConsumeFrom.LAST_OFFSET:
            offset = await self.instance.api.get_max_offset(addr, mq)
        else:
            offset = await offset_for(self.instance.api, addr, mq, where, timestamp_ms)
        await self._move(state, offset)

    async def _move(self, state: _QueueState, offset: int) -> None:
        await self._stop_pulling([state])
        state.buffer.clear()
        state.cached = 0
        state.pull_offset = state.position = offset
        if self._states.get(state.mq) is state:
            self._start_pulling(state)

    async def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Store positions on the broker now and wait for it to confirm.

        Without `offsets`, the position of every owned queue (all polled messages count as
        consumed); with `offsets`, exactly those (the next offset to consume per queue)."""
        if offsets is None:
            await self._commit_states(list(self._states.values()), quiet=False)
            return
        for mq, offset in offsets.items():
            await self._commit_one(mq, offset)
            if (state := self._states.get(mq)) is not None:
                state.committed = offset

    async def committed(self, mq: MessageQueue) -> int | None:
        """The group's offset for `mq` stored on the broker, None if it has none."""
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        return await committed_offset(self.instance.api, addr, self.group, mq)

    def position(self, mq: MessageQueue) -> int | None:
        """The next offset `poll()` will return for `mq` (None until known)."""
        state = self._state(mq)
        return state.position if state.position is not None else state.pull_offset

    async def _commit_one(self, mq: MessageQueue, offset: int) -> None:
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        await self.instance.api.update_consumer_offset(addr, self.group, mq, offset)

    async def _commit_states(self, states: list[_QueueState], *, quiet: bool) -> None:
        for state in states:
            offset = state.position
            if offset is None or offset == state.committed:
                continue
            try:
                await self._commit_one(state.mq, offset)
            except ClientError as exc:
                if not quiet:
                    raise
                log.warning("committing %s at %d failed: %s", state.mq, offset, exc)
                continue
            state.committed = offset

    # ------------------------------------------------------------------ pause / resume

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling these queues and hold back what is buffered, until `resume`."""
        for mq in queues:
            state = self._state(mq)
            state.paused = True
            state.room.clear()

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for mq in queues:
            self._state(mq).paused = False
        self._wake_pullers()
        self._arrival.set()

    # ------------------------------------------------------------------ pulling

    def _start_pulling(self, state: _QueueState) -> None:
        state.room.set() if self._has_room(state) else state.room.clear()
        state.task = asyncio.create_task(self._pull_loop(state), name=f"lite pull {state.mq}")

    async def _stop_pulling(self, states: list[_QueueState]) -> None:
        tasks = [s.task for s in states if s.task is not None]
        for state in states:
            state.task = None
        for task in tasks:
            task.cancel()
        for task in tasks:
            await ended(task)

    async def _pull_loop(self, state: _QueueState) -> None:
        instance = self.instance
        mq = state.mq
        while True:
            while not self._has_room(state):
                state.room.clear()
                await state.room.wait()
            try:
                addr = await instance.find_master_addr(mq.broker_name, mq.topic)
                if state.pull_offset is None:
                    state.pull_offset = await initial_offset(
                        instance.api,
                        addr,
                        self.group,
                        mq,
                        self.consume_from,
                        self.consume_timestamp_ms,
                    )
                    state.position = state.pull_offset
                result = await instance.api.pull(
                    addr,
                    PullMessageRequestHeader(
                        consumerGroup=self.group,
                        topic=mq.topic,
                        queueId=mq.queue_id,
                        queueOffset=state.pull_offset,
                        maxMsgNums=self.pull_batch_size,
                        sysFlag=_PULL_SYS_FLAG,
                        commitOffset=0,
                        suspendTimeoutMillis=int(self.broker_suspend_timeout * 1000),
                        subVersion=state.sub_version,
                        subscription=state.expression.expression,
                        expressionType="TAG",
                    ),
                    timeout=self.pull_timeout,
                    tag_filter=state.expression,
                )
            except BrokerBusyError as exc:
                log.debug("pull %s: broker busy: %s", mq, exc)
                await asyncio.sleep(_BACKOFF_ON_BUSY)
                continue
            except ClientError as exc:
                log.warning("pull %s failed, retrying in %.0fs: %s", mq, _BACKOFF_ON_ERROR, exc)
                await asyncio.sleep(_BACKOFF_ON_ERROR)
                continue
            if result.status is PullStatus.OFFSET_ILLEGAL:
                log.warning(
                    "pull %s: offset %d is illegal, moving to %d",
                    mq,
                    state.pull_offset,
                    result.next_begin_offset,
                )
                if state.position == state.pull_offset and not state.buffer:
                    state.position = result.next_begin_offset
            state.pull_offset = result.next_begin_offset
            if result.messages:
                state.buffer.append(result.messages)
                state.cached += len(result.messages)
                self._arrival.set()

    # ------------------------------------------------------------------ rebalance

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_ACTIVELY",
            message_model="CLUSTERING",
            consume_from_where=self.consume_from.value,
            subscription_data_set=[
                SubscriptionData.of(topic, sub.expression.expression, sub.version)
                for topic, sub in sorted(self._subscriptions.items())
            ],
        )

    def on_consumer_ids_changed(self) -> None:
        self._rebalance_wanted.set()

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """Ignored, as Java's lite pull consumer ignores it: positions are the application's
        (`seek`)."""
        log.info("%s: ignoring a broker's offset reset of %s (use seek)", self, topic)

    def _on_route_changed(self, topic: str, route: TopicRoute) -> None:
        if topic in self._subscriptions:
            self._rebalance_wanted.set()

    async def _rebalance_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.rebalance_interval):
                    await self._rebalance_wanted.wait()
            self._rebalance_wanted.clear()
            try:
                await self.rebalance()
            except ClientError as exc:
                log.warning("rebalance of %s failed: %s", self.group, exc)

    async def rebalance(self) -> None:
        """Recompute this member's share of every subscribed topic and apply it."""
        instance = self.instance
        allocate = self.allocate
        wanted: set[MessageQueue] = set()
        for topic in list(self._subscriptions):
            current = {mq for mq in self._states if mq.topic == topic}
            try:
                route = await instance.route(topic)
                queues = sorted(route.subscribe_queues)
                masters = [a for b in route.brokers if (a := b.master_addr)]
                if not queues or not masters:
                    wanted |= current
                    continue
                ids = await instance.api.get_consumer_ids(random.choice(masters), self.group)
            except ClientError as exc:
                log.info("rebalance of %s on %s postponed: %s", self.group, topic, exc)
                wanted |= current
                continue
            if instance.client_id not in ids:
                # Our heartbeat has not reached that broker yet: keep what we have.
                instance.request_heartbeat()
                wanted |= current
                continue
            wanted.update(allocate(self.group, instance.client_id, queues, sorted(ids)))
        removed = [s for mq, s in self._states.items() if mq not in wanted]
        if removed:
            await self._stop_pulling(removed)
            if self.auto_commit:
                await self._commit_states(removed, quiet=True)
        self._apply_assignment(wanted)

    def _apply_assignment(self, wanted: set[MessageQueue]) -> None:
        for mq in [mq for mq in self._states if mq not in wanted]:
            state = self._states.pop(mq)
            if state.task is not None:
                state.task.cancel()
        for mq in sorted(wanted - set(self._states)):
            sub = self._subscriptions.get(mq.topic)
            state = _QueueState(
                mq,
                sub.expression if sub else TagExpression.parse("*"),
                sub.version if sub else 0,
            )
            self._states[mq] = state
            self._start_pulling(state)
        if wanted:
            log.debug("%s owns %s", self.group, ", ".join(str(m) for m in sorted(wanted)))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
