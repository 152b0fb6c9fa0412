"""Administration: topics, routes, a group's progress and offset resets, message lookups.

What `mqadmin` does for RocketMQ, as a library the `longboat` CLI wraps.  `Admin` is one class
made of its parts, each a module of its own: the cluster reads (`admin_cluster`), consumer
groups (`admin_groups`: progress, lag, offset resets) and message lookups (`admin_lookups`);
topic management is here.  Choices made where RocketMQ leaves users guessing (see the lessons
file) are written at each part.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from longboat.client.admin_groups import (
    GroupAdmin,
    QueueOffset,
    QueueProgress,
    ResetTarget,
    is_retry_queue,
    known_lag,
    total_lag,
)
from longboat.client.admin_lookups import MessageLookup
from longboat.client.errors import (
    BrokerError,
    ClientError,
    ClientUsageError,
    NoRouteError,
    QueuesHoldMessagesError,
    TransportError,
)
from longboat.client.tasks import poll_until
from longboat.protocol import ResponseCode
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.topic_names import admin_topic_refusal
from longboat.protocol.types import PERM_READ, PERM_WRITE, MessageQueue

__all__ = [
    "Admin",
    "QueueOffset",
    "QueueProgress",
    "QueueStatus",
    "ResetTarget",
    "is_retry_queue",
    "known_lag",
    "total_lag",
]
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


class Admin(GroupAdmin, MessageLookup):
    """Cluster, topic and group administration over the name servers and brokers."""

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

    async def _wait_for_route(
        self, topic: str, brokers: set[str], config: TopicConfig, timeout: float
    ) -> None:
        # Brokers re-register at once after a create; the name server offers no change event,
        # so poll it briefly.
        async def routed() -> bool:
            try:
                data = await self.instance.api.get_route(topic)
            except BrokerError:
                return False
            ready = {
                q.broker_name
                for q in data.queue_datas
                if q.write_queue_nums == config.write_queue_nums
                and q.read_queue_nums == config.read_queue_nums
                and q.perm == config.perm
            }
            if brokers <= ready:
                self.instance.learn_route(topic, data)
                return True
            return False

        if not await poll_until(routed, timeout, _ROUTE_POLL_INTERVAL):
            raise TransportError(
                f"topic {topic} was created but the name server did not route it to "
                f"{', '.join(sorted(brokers))} within {timeout:.0f}s"
            )
