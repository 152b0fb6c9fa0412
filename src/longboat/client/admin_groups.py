"""Consumer groups for the admin: members, per-queue progress and lag, offset resets.

`group_progress` reports every queue separately, with lag and lag time (how long the oldest
unconsumed message has waited), so one stuck queue is visible.  `reset_offsets` refuses while
the group has live members: a running consumer keeps offsets in memory and would overwrite
the reset at its next commit; `force=True` writes anyway.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from longboat.client._internal.api import ClientAPI
from longboat.client.admin_cluster import ClusterReader
from longboat.client.errors import BrokerError, ClientUsageError, GroupOnlineError, TransportError
from longboat.protocol import ResponseCode
from longboat.protocol.assignment_bodies import MessageRequestMode, MessageRequestModeBody
from longboat.protocol.bodies import ClientConnection, ConsumerConnection, SubscriptionGroupConfig
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX, validate_group
from longboat.protocol.types import MessageQueue


@dataclass(frozen=True, slots=True)
class QueueOffset:
    """A reset target naming the offset itself (it must lie within each queue's range)."""

    offset: int


ResetTarget = Literal["earliest", "latest"] | int | datetime | QueueOffset


@dataclass(frozen=True, slots=True)
class QueueProgress:
    mq: MessageQueue
    broker_offset: int
    # None when the group has stored no offset on this queue (it never committed one there):
    # a consumer joining would start where its consume-from setting says, so there is no lag
    # to report, and showing 0 would claim the whole queue as lag.
    consumer_offset: int | None
    # Store time (ms) of the last consumed message; 0 when unknown or nothing consumed.
    last_timestamp: int
    # Seconds the oldest unconsumed message has waited; None when nothing is waiting.
    lag_time: float | None

    @property
    def lag(self) -> int | None:
        if self.consumer_offset is None:
            return None
        return max(0, self.broker_offset - self.consumer_offset)


def total_lag(progress: Iterable[QueueProgress]) -> int:
    """The lag of the queues with a stored offset, retry queues left out (their lag is the
    group's own retries, not messages it has yet to read)."""
    return sum(p.lag or 0 for p in progress if not is_retry_queue(p.mq))


def known_lag(progress: Iterable[QueueProgress]) -> int | None:
    """`total_lag`, or None when the group stored no offset on any queue of a topic it reads:
    then nothing says how far behind it is, and 0 would claim it caught up."""
    rows = [p for p in progress if not is_retry_queue(p.mq)]
    if all(p.consumer_offset is None for p in rows):
        return None
    return total_lag(rows)


async def stored_offset(
    api: ClientAPI, addr: str, group: str, mq: MessageQueue, reported: int
) -> int | None:
    """The group's stored offset on `mq`, None when it never committed there.  Consume stats
    report 0 for such a queue, as for one committed at 0; asked for the one queue, with
    `setZeroIfNotFound=false`, the broker tells them apart (a RocketMQ 4.x broker ignores the
    flag and answers 0 while the queue's first message is still in memory)."""
    if reported > 0:
        return reported
    return await api.query_consumer_offset(addr, group, mq, set_zero_if_not_found=False)


def is_retry_queue(mq: MessageQueue) -> bool:
    return mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


class GroupAdmin(ClusterReader):
    """What `Admin` does with consumer groups."""

    async def groups(self) -> list[str]:
        """Consumer groups known to the name servers: every group that ever sent a heartbeat
        has a `%RETRY%group` topic (RocketMQ keeps no other cluster-wide group list)."""
        prefix = RETRY_GROUP_TOPIC_PREFIX
        return sorted(t[len(prefix) :] for t in await self.topics() if t.startswith(prefix))

    async def group_summary(self, group: str) -> tuple[int, int | None]:
        """Live members of `group` and its total lag on the topics it consumes (its own
        retry topic left out); the lag is None while the group has stored no offset."""
        members, progress = await asyncio.gather(
            self.consumer_ids(group), self.group_progress(group, with_lag_time=False)
        )
        return len(members), known_lag(progress)

    async def consumed_topics(self, group: str) -> list[str]:
        """The topics `group` has offsets on, without its own retry topic."""
        progress = await self.group_progress(group, with_lag_time=False)
        return sorted({p.mq.topic for p in progress if not is_retry_queue(p.mq)})

    async def set_message_request_mode(
        self,
        topic: str,
        group: str,
        mode: MessageRequestMode | str,
        *,
        pop_share_queue_num: int = 0,
    ) -> list[str]:
        """Make `group` consume `topic` by "PULL" or "POP" when its clients let the broker
        assign (RocketMQ's `mqadmin setConsumeMode`; the Java client's
        `setClientRebalance(false)`): set on every master of the topic, kept across restarts.
        A broker answers PULL for a pair never set, so such a client pops only after this.
        With POP, `pop_share_queue_num` N > 0 gives each member its own queues and those of
        the N members after it; 0 gives every member every queue.  Returns the masters set.

        Raises ClientUsageError (nothing sent) for a bad mode or group name, BrokerError
        when a broker refuses (a retry topic, an unknown topic)."""
        if problem := validate_group(group):
            raise ClientUsageError(f"invalid group: {problem}")
        try:
            request_mode = MessageRequestMode(str(mode).upper())
        except ValueError:
            raise ClientUsageError(f"mode must be PULL or POP, not {mode!r}") from None
        setting = MessageRequestModeBody(topic, group, request_mode, pop_share_queue_num)
        addrs = await self._master_addrs(topic)
        for addr in addrs:
            await self.instance.api.set_message_request_mode(addr, setting)
        return addrs

    async def consumer_ids(self, group: str, topic: str | None = None) -> list[str]:
        """Live members of `group`, asked of a master of `topic` (or of any broker)."""
        addrs = await self._master_addrs(topic)
        for addr in addrs:
            try:
                return sorted(await self.instance.api.get_consumer_ids(addr, group))
            except TransportError:
                continue
        return []

    async def group_connections(self, group: str, topic: str | None = None) -> ConsumerConnection:
        """Live members (with address, language, version) and subscriptions of `group`, merged
        from every master (of `topic`, or of the cluster): a member heartbeats only to the
        brokers of the topics it subscribes."""
        addrs = await self._master_addrs(topic)
        merged = ConsumerConnection()
        members: dict[str, ClientConnection] = {}
        for addr in addrs:
            try:
                seen = await self.instance.api.get_consumer_connections(addr, group)
            except TransportError:
                continue
            if not seen.connections:
                continue
            members.update((c.client_id, c) for c in seen.connections)
            for name, sub in seen.subscriptions.items():
                known = merged.subscriptions.get(name)
                if known is None or sub.sub_version > known.sub_version:
                    merged.subscriptions[name] = sub
            merged.consume_type = seen.consume_type
            merged.message_model = seen.message_model
            merged.consume_from_where = seen.consume_from_where
        merged.connections = sorted(members.values(), key=lambda c: c.client_id)
        return merged

    async def group_progress(
        self, group: str, topic: str | None = None, *, with_lag_time: bool = True
    ) -> list[QueueProgress]:
        """Per queue of every topic the group consumes (or of `topic`): offsets, lag, times;
        `consumer_offset` and `lag` are None on a queue where the group stored no offset."""
        api = self.instance.api
        addrs = await self._master_addrs(topic)
        rows: list[QueueProgress] = []
        for addr in addrs:
            try:
                stats = await api.get_consume_stats(addr, group, topic)
            except BrokerError as exc:
                if exc.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
                    continue
                raise
            entries = sorted(stats.offset_table.items())
            stored = await asyncio.gather(
                *(stored_offset(api, addr, group, mq, w.consumer_offset) for mq, w in entries)
            )
            for (mq, w), consumer_offset in zip(entries, stored, strict=True):
                last_ts = w.last_timestamp
                lag_time = None
                if with_lag_time and consumer_offset is not None:
                    if not last_ts and consumer_offset > 0:
                        last_ts = await self._store_time(addr, mq, consumer_offset - 1)
                    if w.broker_offset > consumer_offset:
                        oldest = await self._store_time(addr, mq, consumer_offset)
                        lag_time = max(0.0, time.time() - oldest / 1000) if oldest else None
                rows.append(
                    QueueProgress(mq, w.broker_offset, consumer_offset, last_ts or 0, lag_time)
                )
        return sorted(rows, key=lambda r: r.mq)

    async def _store_time(self, addr: str, mq: MessageQueue, offset: int) -> int:
        """Store time (ms) of the message at `offset`, 0 if it is gone."""
        found = await self.instance.api.peek(addr, mq, offset)
        return found[0].store_timestamp if found else 0

    async def reset_offsets(
        self,
        group: str,
        topic: str,
        to: ResetTarget,
        *,
        force: bool = False,
        queue_id: int | None = None,
    ) -> dict[MessageQueue, int]:
        """Move `group`'s offsets on every queue of `topic` (or only queue `queue_id`, on each
        broker) to `to`: "earliest", "latest", a time (epoch ms or datetime; the first
        message stored at or after it), or a `QueueOffset`.

        Raises GroupOnlineError while members are connected, unless `force`, and
        ClientUsageError (nothing sent) for a group name no broker would accept."""
        if problem := validate_group(group):
            raise ClientUsageError(f"invalid group: {problem}")
        if not force:
            members = await self.consumer_ids(group, topic)
            if members:
                raise GroupOnlineError(group, members)
        api = self.instance.api
        route = await self.instance.route(topic, refresh=True)
        if isinstance(to, datetime):
            to = int(to.timestamp() * 1000)
        if isinstance(to, str) and to not in ("earliest", "latest"):
            raise ClientUsageError(f"reset target must be earliest, latest or a time, not {to!r}")
        result: dict[MessageQueue, int] = {}
        queues = [q for q in route.subscribe_queues if queue_id in (None, q.queue_id)]
        if not queues:
            raise ClientUsageError(f"topic {topic} has no queue {queue_id}")
        planned: list[tuple[str, MessageQueue, int]] = []
        for mq in queues:
            addr = await self.instance.find_master_addr(mq.broker_name, topic)
            if to == "earliest":
                offset = await api.get_min_offset(addr, mq)
            elif to == "latest":
                offset = await api.get_max_offset(addr, mq)
            elif isinstance(to, QueueOffset):
                offset = to.offset
                low, high = await api.get_min_offset(addr, mq), await api.get_max_offset(addr, mq)
                if not low <= offset <= high:
                    raise ClientUsageError(
                        f"offset {offset} is outside {mq}'s range {low}..{high}; nothing was reset"
                    )
            else:
                offset = await api.search_offset(addr, mq, int(to))
            planned.append((addr, mq, offset))
        # Every target is known (and in range) before the first offset moves.
        for addr, mq, offset in planned:
            await self._commit_for(addr, group, mq, offset)
            result[mq] = offset
        return result

    async def _commit_for(self, addr: str, group: str, mq: MessageQueue, offset: int) -> None:
        """Commit `offset` for `group`, registering the group first on a broker that does not
        know it: RocketMQ 5 refuses an offset of a group no member ever announced
        (SUBSCRIPTION_GROUP_NOT_EXIST), where 4.x and Longboat store it. The group gets
        RocketMQ's default settings, as its first heartbeat would have given it."""
        api = self.instance.api
        try:
            await api.update_consumer_offset(addr, group, mq, offset)
        except BrokerError as exc:
            if exc.code != ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
                raise
            await api.create_subscription_group(addr, SubscriptionGroupConfig(group_name=group))
            await api.update_consumer_offset(addr, group, mq, offset)
