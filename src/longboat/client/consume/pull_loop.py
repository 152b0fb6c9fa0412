"""One long-polling pull task per owned queue.

States of a loop (one asyncio task; `stop()` cancels it and waits, so once it returns no pull
of this queue is in flight or will be answered into the process queue):

    STARTING  -> find the start offset (stored offset, else consume_from); retried on errors
    WAITING   -> the consumer is suspended or the process queue is over a threshold:
                 await `room` (set by `wake()` when consumption drained the cache) — no timer;
                 or an orderly queue's broker lock is lost (`may_pull`): ask again every
                 LOCK_LOST_RETRY_S
    PULLING   -> one PULL_MESSAGE with the suspend flag in flight (the broker holds it up to
                 `broker_suspend_timeout` until a message arrives; our timeout is longer)
    BACKOFF   -> after an error: sleep, doubling from `error_backoff` up to `max_backoff`

Outcomes of a pull: FOUND → messages into the process queue and to the consume service, pull
again from `nextBeginOffset` after `pull_interval`; NO_NEW_MSG (the hold expired) and
NO_MATCHED_MSG (only filtered entries) → pull again at once from `nextBeginOffset`, which is
also the committed offset when nothing is cached (Java's correctTagsOffset); OFFSET_ILLEGAL →
move to the broker's `nextBeginOffset` and record it as the committed offset when nothing
before it is pending.

The subscription travels with every pull (subscription flag), so pulls never depend on the
heartbeat having reached the broker first; the committed offset rides along too (commit
flag) in clustering mode, which saves the broker a separate update for busy queues.

Each pull goes to the broker of the queue's group that the previous answer suggested
(`suggestWhichBrokerId`), or to another of the group when that one is gone or did not answer
(`ClientInstance.pull_target`): a slave serves the queue while its master is down, and the
master takes it back when it answers again.  A pull to a slave carries no committed offset
(slaves keep their master's offsets), as Java's.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from longboat.client._internal.instance import ClientInstance
from longboat.client.consume.process_queue import ProcessQueue
from longboat.client.consumer_settings import PullSettings
from longboat.client.errors import BrokerBusyError, ClientError, ClientUsageError, TransportError
from longboat.client.tasks import BackgroundTask
from longboat.client.types import PullStatus
from longboat.filter.sql92 import FilterError, compile_sql92
from longboat.protocol.bodies import SubscriptionData
from longboat.protocol.message import MessageExt
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import MASTER_ID, MessageQueue

log = logging.getLogger(__name__)

# How long a queue whose broker lock is lost waits before asking again (Java: 3 s).
LOCK_LOST_RETRY_S = 3.0
# A retry answer that did not move the offset (a slave behind this consumer, while the master
# is gone) is not repeated at once: the loop would spin until the slave or the master has it.
NO_PROGRESS_PAUSE_S = 0.2


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a consumer takes from one topic: messages whose tag matches `expression`, or,
    with `sql`, whose properties match that SQL92 selector (the broker filters; `expression`
    is then `*`).  `version` is the subVersion the broker compares."""

    expression: TagExpression
    version: int
    sql: str | None = None

    @classmethod
    def of(cls, expression: str = "*", *, sql: str | None = None) -> Subscription:
        """A new subscription; an SQL92 selector is compiled here so a mistake is the
        caller's ClientUsageError, not a pull loop's broker error later."""
        if sql is not None:
            if expression != "*":
                raise ClientUsageError("subscribe by tag expression or by sql, not both")
            try:
                compile_sql92(sql)
            except FilterError as exc:
                raise ClientUsageError(f"cannot subscribe: {exc}") from None
        return cls(TagExpression.parse(expression), int(time.time() * 1000), sql)

    def data(self, topic: str) -> SubscriptionData:
        """As the heartbeat carries it."""
        if self.sql is not None:
            return SubscriptionData.sql92(topic, self.sql, self.version)
        return SubscriptionData.of(topic, self.expression.expression, self.version)


class PullLoop:
    """Pulls one queue into its process queue for as long as the queue is owned."""

    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        mq: MessageQueue,
        pq: ProcessQueue,
        subscription: Subscription,
        settings: PullSettings,
        *,
        start_offset: Callable[[], Awaitable[int]],
        deliver: Callable[[MessageQueue, ProcessQueue, list[MessageExt]], None],
        offset_moved: Callable[[MessageQueue, int], None],
        commit_offset: Callable[[MessageQueue], int | None] | None,
        running: asyncio.Event,
        may_pull: Callable[[], bool] | None = None,
    ) -> None:
        """`may_pull`, when given, is asked before every pull (an orderly queue's broker
        lock): while it says no, the loop asks again every LOCK_LOST_RETRY_S."""
        self.instance = instance
        self.group = group
        self.mq = mq
        self.pq = pq
        self.subscription = subscription
        self.settings = settings
        self._start_offset = start_offset
        self._deliver = deliver
        self._offset_moved = offset_moved
        self._commit_offset = commit_offset
        self._running = running
        self._may_pull = may_pull
        self.room = asyncio.Event()
        self.next_offset: int | None = None
        self._task = BackgroundTask()
        # Observability: how often pulls waited for room, and consecutive failures.
        self.flow_control_waits = 0
        self.failures = 0

    def start(self) -> None:
        self._task.start(self._run(), f"pull {self.mq}")

    async def stop(self) -> None:
        await self._task.stop()

    def wake(self) -> None:
        """The process queue shrank (or the consumer resumed): re-check the room."""
        self.room.set()

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        while self.next_offset is None:
            try:
                self.next_offset = await self._start_offset()
            except ClientError as exc:
                await self._back_off(exc)
        self.pq.start_at(self.next_offset)
        self.failures = 0
        while True:
            size = await self._wait_for_room()
            try:
                found = await self._pull_once(size)
            except ClientError as exc:
                await self._back_off(exc)
                continue
            self.failures = 0
            if found and self.settings.pull_interval > 0:
                # After FOUND only, as Java: an empty long poll already waited at the broker.
                await asyncio.sleep(self.settings.pull_interval)

    async def _wait_for_room(self) -> int:
        """Block (no request in flight) until pulling is allowed; the batch size to ask for."""
        while True:
            if not self._running.is_set():
                await self._running.wait()
                continue
            if self._may_pull is not None and not self._may_pull():
                # Orderly without its broker lock: pulled messages could not be consumed
                # in order anyway (Java: "pull message later because not locked in broker").
                await asyncio.sleep(LOCK_LOST_RETRY_S)
                continue
            size = self.pq.pull_size(self.settings.pull_batch_size)
            if size > 0 and self.pq.flow_control() is None:
                return size
            self.flow_control_waits += 1
            self.room.clear()
            # Re-check after clearing: a wake() between the check and the clear is not lost.
            if self.pq.pull_size(self.settings.pull_batch_size) > 0 and (
                self.pq.flow_control() is None
            ):
                continue
            await self.room.wait()

    async def _pull_once(self, size: int) -> bool:
        """One pull and what follows from its answer; True when it found messages."""
        assert self.next_offset is not None
        mq, sub, s = self.mq, self.subscription, self.settings
        instance = self.instance
        requested = self.next_offset
        broker_id, addr = await instance.pull_target(mq)
        commit = None
        if self._commit_offset is not None and broker_id == MASTER_ID:
            commit = self._commit_offset(mq)
        try:
            result = await instance.api.pull(
                addr,
                mq,
                self.next_offset,
                group=self.group,
                max_msgs=size,
                timeout=s.pull_timeout,
                expression=sub.expression,
                sql=sub.sql,
                sub_version=sub.version,
                suspend=s.broker_suspend_timeout,
                commit_offset=commit if commit is not None and commit > 0 else None,
                lite=s.lite,
            )
        except TransportError:
            instance.pull_targets.unreachable(addr)
            raise
        instance.pull_targets.reachable(addr)
        instance.pull_targets.suggest(mq, result.suggest_which_broker_id)
        if self.pq.dropped:
            return False
        if result.status is PullStatus.OFFSET_ILLEGAL:
            log.warning(
                "pull %s for %s: offset %d is outside [%d, %d]; moving to %d",
                mq,
                self.group,
                self.next_offset,
                result.min_offset,
                result.max_offset,
                result.next_begin_offset,
            )
            self.next_offset = result.next_begin_offset
            if self.pq.move_to(result.next_begin_offset):
                self._offset_moved(mq, result.next_begin_offset)
            return False
        self.next_offset = result.next_begin_offset
        if result.status is not PullStatus.FOUND:
            # NO_NEW_MSG / NO_MATCHED_MSG: with nothing cached, the broker's offset is the
            # committed one (Java's correctTagsOffset), so a queue whose messages are all
            # filtered out shows no lag.
            if self.pq.move_to(result.next_begin_offset):
                self._offset_moved(mq, result.next_begin_offset)
            if result.status is PullStatus.NO_MATCHED_MSG and result.next_begin_offset == requested:
                await asyncio.sleep(NO_PROGRESS_PAUSE_S)
            return False
        fresh = self.pq.put(result.messages) if result.messages else []
        self.pq.skip_to(result.next_begin_offset)
        if fresh:
            self._deliver(mq, self.pq, fresh)
        return True

    async def _back_off(self, exc: ClientError) -> None:
        self.failures += 1
        s = self.settings
        base = s.busy_backoff if isinstance(exc, BrokerBusyError) else s.error_backoff
        delay = min(s.max_backoff, base * 2 ** (self.failures - 1))
        delay *= random.uniform(0.8, 1.2)
        level = logging.DEBUG if isinstance(exc, BrokerBusyError) else logging.WARNING
        log.log(level, "pull %s for %s failed, again in %.2fs: %s", self.mq, self.group, delay, exc)
        await asyncio.sleep(delay)
