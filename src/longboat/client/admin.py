"""Administration: topics, routes, a group's progress and offset resets, message lookups.

What `mqadmin` does for RocketMQ, as a library the `longboat` CLI wraps.  Choices made where
RocketMQ leaves users guessing (see the lessons file):

* `group_progress` reports every queue separately, with lag and lag time (how long the oldest
  unconsumed message has waited), so one stuck queue is visible.
* `reset_offsets` refuses while the group has live members: a running consumer keeps offsets in
  memory and would overwrite the reset at its next commit.  `force=True` writes anyway.
* Lookups say why they found nothing (`MessageNotFoundError`), and `message_by_id` accepts both
  ids a user may hold: the producer's UNIQ_KEY (needs the topic) and the broker's offset id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from longboat.client._internal.api import ClientAPI
from longboat.client.errors import (
    BrokerError,
    ClientError,
    ClientUsageError,
    GroupOnlineError,
    MessageNotFoundError,
    NoRouteError,
    QueuesHoldMessagesError,
    TransportError,
)
from longboat.client.lifecycle import RegisteringNothingUser
from longboat.protocol import ProtocolError, ResponseCode
from longboat.protocol.bodies import (
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
)
from longboat.protocol.controller import BrokerReplicasInfo
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.message import MessageExt
from longboat.protocol.topic_names import (
    RETRY_GROUP_TOPIC_PREFIX,
    admin_topic_refusal,
    is_system_topic,
    topic_kind,
    validate_group,
)
from longboat.protocol.types import PERM_READ, PERM_WRITE, MessageQueue


@dataclass(frozen=True, slots=True)
class QueueOffset:
    """A reset target naming the offset itself (it must lie within each queue's range)."""

    offset: int


ResetTarget = Literal["earliest", "latest"] | int | datetime | QueueOffset
_ROUTE_POLL_INTERVAL = 0.05


@dataclass(frozen=True, slots=True)
class QueueStatus:
    mq: MessageQueue
    # The oldest offset still stored and the next offset to be written.
    min_offset: int
    max_offset: int

    @property
    def messages(self) -> int:
        return max(0, self.max_offset - self.min_offset)


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


class Admin(RegisteringNothingUser):
    """Cluster, topic and group administration over the name servers and brokers."""

    # ------------------------------------------------------------------ cluster and topics

    async def cluster_info(self) -> ClusterInfo:
        return await self.instance.api.get_cluster_info()

    async def topics(self) -> list[str]:
        return sorted(await self.instance.api.get_all_topics())

    async def user_topics(self) -> list[str]:
        """Topics of users: no group's retry or DLQ topic, none the brokers keep."""
        info, topics = await asyncio.gather(self.cluster_info(), self.topics())
        reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
        return [t for t in topics if topic_kind(t, reserved) == "normal"]

    async def route(self, topic: str) -> TopicRouteData:
        """The topic's route as the name server has it; NoRouteError when unknown."""
        data = await self.instance.api.get_route(topic)
        self.instance.learn_route(topic, data)
        return data

    async def route_or_none(self, topic: str) -> TopicRouteData | None:
        """The topic's route, None when no broker serves it (a listing read a moment ago may
        name a topic deleted since)."""
        try:
            return await self.route(topic)
        except NoRouteError:
            return None

    async def master_brokers(self, cluster: str | None = None) -> dict[str, str]:
        """Broker name → master address, of one cluster or of all."""
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise ClientUsageError(
                f"no cluster {cluster!r}; known: {', '.join(sorted(info.cluster_addr_table))}"
            )
        names = (
            info.cluster_addr_table[cluster]
            if cluster is not None
            else [n for names in info.cluster_addr_table.values() for n in names]
        )
        out: dict[str, str] = {}
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            if data is not None and data.master_addr:
                out[name] = data.master_addr
        return out

    async def create_topic(
        self,
        topic: str,
        *,
        queue_nums: int = 8,
        read_queue_nums: int | None = None,
        write_queue_nums: int | None = None,
        perm: int = PERM_READ | PERM_WRITE,
        order: bool = False,
        cluster: str | None = None,
        wait: bool = True,
        timeout: float = 10.0,
    ) -> list[str]:
        """Create (or update) `topic` on every master of `cluster` (all clusters when None).

        With `wait`, returns once the name server routes the topic to every one of those
        brokers, so producers and consumers started next find it.  Returns the broker names.
        A name no broker would accept raises ClientUsageError before anything is sent."""
        if problem := admin_topic_refusal(topic):
            raise ClientUsageError(f"cannot create topic: {problem}")
        masters = await self.master_brokers(cluster)
        if not masters:
            raise ClientError("no master broker is registered with the name server")
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=read_queue_nums or queue_nums,
            write_queue_nums=write_queue_nums or queue_nums,
            perm=perm,
            order=order,
        )
        await asyncio.gather(*(self.instance.api.create_topic(a, config) for a in masters.values()))
        if wait:
            await self._wait_for_route(topic, set(masters), config, timeout)
        return sorted(masters)

    async def update_topic(
        self,
        topic: str,
        *,
        read_queue_nums: int | None = None,
        write_queue_nums: int | None = None,
        perm: int | None = None,
        order: bool | None = None,
        shrink: bool = False,
        timeout: float = 10.0,
    ) -> list[str]:
        """Change settings of an existing topic on the brokers that serve it, keeping what is
        not given (per broker); NoRouteError when no broker serves it.  Returns broker names.

        Fewer read queues hide the queues past the new count from every consumer: when they
        hold messages a group has not consumed, QueuesHoldMessagesError, unless `shrink`.
        A name no broker would accept raises ClientUsageError before anything is sent; a
        topic no broker serves, NoRouteError (not retriable: create it first)."""
        if problem := admin_topic_refusal(topic):
            raise ClientUsageError(f"cannot update topic: {problem}")
        route = await self.route_or_none(topic)
        if route is None:
            raise NoRouteError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"no broker serves topic {topic}: create it first",
                retriable=False,
            )
        current = {q.broker_name: q for q in route.queue_datas}
        if read_queue_nums is not None and not shrink:
            hidden = [
                MessageQueue(topic, name, queue_id)
                for name, queue in current.items()
                for queue_id in range(read_queue_nums, queue.read_queue_nums)
            ]
            if unconsumed := await self._unconsumed(hidden):
                raise QueuesHoldMessagesError(topic, unconsumed)
        for name, queue in sorted(current.items()):
            config = TopicConfig(
                topic_name=topic,
                read_queue_nums=read_queue_nums or queue.read_queue_nums,
                write_queue_nums=write_queue_nums or queue.write_queue_nums,
                perm=queue.perm if perm is None else perm,
                topic_sys_flag=queue.topic_sys_flag,
                order=bool(order),
            )
            addr = await self.instance.find_master_addr(name, topic)
            await self.instance.api.create_topic(addr, config)
            await self._wait_for_route(topic, {name}, config, timeout)
        return sorted(current)

    async def _unconsumed(self, queues: list[MessageQueue]) -> dict[MessageQueue, int]:
        """Of `queues` (of one topic), those holding messages some group has yet to consume,
        with how many: from the lowest offset a group stored there, or from the queue's
        oldest message when no group stored one."""
        if not queues:
            return {}
        topic = queues[0].topic
        status = {s.mq: s for s in await self.topic_status(topic)}
        progress = await asyncio.gather(
            *(self.group_progress(g, topic, with_lag_time=False) for g in await self.groups())
        )
        lowest: dict[MessageQueue, int] = {}
        for rows in progress:
            for p in rows:
                if p.consumer_offset is not None:
                    lowest[p.mq] = min(lowest.get(p.mq, p.consumer_offset), p.consumer_offset)
        out: dict[MessageQueue, int] = {}
        for mq in queues:
            if (s := status.get(mq)) is None:
                continue
            left = s.max_offset - max(s.min_offset, lowest.get(mq, s.min_offset))
            if left > 0:
                out[mq] = left
        return out

    async def delete_topic(self, topic: str) -> list[str]:
        """Delete `topic` from every master that serves it, then from the name servers (as
        `mqadmin deleteTopic`).  Committed offsets stay, and the queues' data is left to
        retention.  NoRouteError when no broker serves it; returns the broker names."""
        route = await self.route(topic)
        names = sorted({q.broker_name for q in route.queue_datas})
        for name in names:
            addr = await self.instance.find_master_addr(name, topic)
            await self.instance.api.delete_topic_in_broker(addr, topic)
        await self.instance.api.delete_topic_in_namesrv(topic)
        return names

    async def broker_runtime(self, addr: str) -> dict[str, str]:
        """The broker's runtime figures (version, disk use, put/get TPS), RocketMQ's names."""
        return await self.instance.api.get_runtime_info(addr)

    async def broker_config(self, addr: str) -> dict[str, str]:
        """The settings of the broker at `addr`, by their broker.conf keys (RocketMQ's names)."""
        return await self.instance.api.get_broker_config(addr)

    async def sync_state_data(
        self, controller_addrs: list[str], broker_names: list[str]
    ) -> BrokerReplicasInfo:
        """Controller mode: each group's master, master epoch and SyncStateSet, from whichever
        of `controller_addrs` leads.  Raises the last controller's error when none answers."""
        last: ClientError | None = None
        for addr in controller_addrs:
            try:
                return await self.instance.api.get_sync_state_data(addr, broker_names)
            except ClientError as exc:
                last = exc
        raise last or ClientUsageError("no controller address given")

    async def topic_status(self, topic: str) -> list[QueueStatus]:
        """Min and max offset of every queue of `topic`, on every broker that serves it."""
        route = await self.instance.route(topic, refresh=True)
        queues = sorted(route.subscribe_queues)
        api = self.instance.api

        async def status(mq: MessageQueue) -> QueueStatus:
            addr = await self.instance.find_master_addr(mq.broker_name, topic)
            return QueueStatus(
                mq, await api.get_min_offset(addr, mq), await api.get_max_offset(addr, mq)
            )

        return list(await asyncio.gather(*(status(mq) for mq in queues)))

    async def broker_topics(self, addr: str) -> dict[str, TopicConfig]:
        """The topic table of the broker at `addr` (system topics included)."""
        return await self.instance.api.get_topic_configs(addr)

    async def _wait_for_route(
        self, topic: str, brokers: set[str], config: TopicConfig, timeout: float
    ) -> None:
        # Brokers re-register at once after a create; the name server offers no change event,
        # so poll it briefly.
        deadline = time.monotonic() + timeout
        while True:
            try:
                data = await self.instance.api.get_route(topic)
                ready = {
                    q.broker_name
                    for q in data.queue_datas
                    if q.write_queue_nums == config.write_queue_nums
                    and q.read_queue_nums == config.read_queue_nums
                    and q.perm == config.perm
                }
                if brokers <= ready:
                    self.instance.learn_route(topic, data)
                    return
            except BrokerError:
                pass
            if time.monotonic() >= deadline:
                raise TransportError(
                    f"topic {topic} was created but the name server did not route it to "
                    f"{', '.join(sorted(brokers))} within {timeout:.0f}s"
                )
            await asyncio.sleep(_ROUTE_POLL_INTERVAL)

    # ------------------------------------------------------------------ groups

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

    async def _master_addrs(self, topic: str | None) -> list[str]:
        if topic is None:
            return list((await self.master_brokers()).values())
        route = await self.instance.route(topic, refresh=True)
        return [a for b in route.brokers if (a := b.master_addr)]

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

    # ------------------------------------------------------------------ lookups

    async def message_by_id(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """The message with this id: the producer's UNIQ_KEY (searched in `topic`, or in every
        non-system topic when the id cannot be an offset id) or the broker's offset id (which
        names the broker and position itself)."""
        if topic is not None:
            found = await self._query(topic, msg_id, unique_key=True, max_num=32)
            if found:
                return min(found, key=lambda m: m.store_timestamp)
        try:
            host, port, offset = decode_offset_msg_id(msg_id)
        except ProtocolError:
            if topic is not None:
                raise MessageNotFoundError(
                    f"no message with UNIQ_KEY {msg_id} in topic {topic}"
                ) from None
            return await self._search_unique_key(msg_id)
        # A UNIQ_KEY is as long as an offset id; its bytes seldom make a port and an offset.
        if not 0 < port <= 0xFFFF or offset < 0:
            if topic is not None:
                raise MessageNotFoundError(f"no message with UNIQ_KEY {msg_id} in topic {topic}")
            return await self._search_unique_key(msg_id)
        addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            return await self.instance.api.view_message(addr, offset)
        except (BrokerError, TransportError) as exc:
            where = f"UNIQ_KEY in topic {topic}, nor " if topic else ""
            raise MessageNotFoundError(
                f"no message {msg_id} as {where}offset id (broker {addr}, offset {offset}): {exc}"
            ) from exc

    async def _search_unique_key(self, msg_id: str) -> MessageExt:
        topics = [t for t in await self.topics() if not is_system_topic(t)]
        batches = await asyncio.gather(
            *(self._query(t, msg_id, unique_key=True, max_num=32) for t in topics),
            return_exceptions=True,
        )
        found = [m for batch in batches if isinstance(batch, list) for m in batch]
        if not found:
            raise MessageNotFoundError(
                f"{msg_id} is not an offset id, and no message has it as UNIQ_KEY in any of "
                f"{len(topics)} topic(s)"
            )
        return min(found, key=lambda m: m.store_timestamp)

    async def messages_by_key(
        self,
        topic: str,
        key: str,
        *,
        begin_ms: int = 0,
        end_ms: int | None = None,
        max_num: int = 64,
    ) -> list[MessageExt]:
        """Messages of `topic` carrying `key` in KEYS, from every broker, oldest first."""
        found = await self._query(
            topic, key, unique_key=False, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms
        )
        return sorted(found, key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))

    async def _query(
        self,
        topic: str,
        key: str,
        *,
        unique_key: bool,
        max_num: int,
        begin_ms: int = 0,
        end_ms: int | None = None,
    ) -> list[MessageExt]:
        addrs = await self._master_addrs(topic)
        batches = await asyncio.gather(
            *(
                self.instance.api.query_message(
                    addr,
                    topic,
                    key,
                    max_num=max_num,
                    begin_ms=begin_ms,
                    end_ms=end_ms,
                    unique_key=unique_key,
                )
                for addr in addrs
            )
        )
        return [m for batch in batches for m in batch]
