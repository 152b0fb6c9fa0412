"""`QueueReader`: read queues by offset and keep a group's offsets by hand, without joining it.

What RocketMQ's `DefaultMQPullConsumer` offered and connectors, tools and benchmarks need: the
caller chooses queues and offsets, pulls ranges, and commits where it wants; there is no
rebalance, no heartbeat for the group and no buffering.  Applications that consume a group
use `LitePullConsumer` or `PushConsumer` instead.  Every method finds the queue's master
broker through the shared client instance's routes; a light message queue's (`lmq_queue`),
which has none, through the name server's cluster table.
"""

from __future__ import annotations

import asyncio

from longboat.client.consume_from import committed_offset
from longboat.client.errors import NoRouteError
from longboat.client.lifecycle import RegisteringNothingUser
from longboat.client.message import check_lmq
from longboat.client.tasks import poll_until
from longboat.client.types import PullResult
from longboat.protocol.tags import TagExpression
from longboat.protocol.topic_names import LMQ_QUEUE_ID, is_lmq
from longboat.protocol.types import MessageQueue

_ROUTE_POLL_INTERVAL = 0.05


def lmq_queue(name: str, broker_name: str) -> MessageQueue:
    """The one queue of light message queue `name` on `broker_name` (the broker a message
    sent with `Message.lmqs` was stored on: its `SendResult.message_queue.broker_name`), to
    read with a `QueueReader`.  ClientUsageError when `name` is no LMQ's (`check_lmq`)."""
    return MessageQueue(check_lmq(name), broker_name, LMQ_QUEUE_ID)


class QueueReader(RegisteringNothingUser):
    """Pulls, offsets and commits of single queues; an async context manager."""

    # ------------------------------------------------------------------ what there is

    async def topics(self) -> list[str]:
        """Every topic the name servers know (system topics included)."""
        return sorted(await self.instance.api.get_all_topics())

    async def queues(self, topic: str, *, wait: float = 0.0) -> list[MessageQueue]:
        """The topic's readable queues, sorted, asked of the name server now.

        With `wait` > 0, a topic without queues yet (just created) is asked again until it
        has some or `wait` seconds passed; then NoRouteError, as for an unknown topic."""
        found: list[MessageQueue] = []
        # The last asking's refusal: what the caller hears if the time runs out on it.
        refused: list[NoRouteError] = []

        async def readable() -> bool:
            refused.clear()
            try:
                route = await self.instance.route(topic, refresh=True)
            except NoRouteError as exc:
                refused.append(exc)
                return False
            found[:] = sorted(route.subscribe_queues)
            return bool(found)

        if await poll_until(readable, wait, _ROUTE_POLL_INTERVAL):
            return found
        if refused:
            raise refused[0]
        raise NoRouteError(0, f"topic {topic} has no readable queue")

    async def master_addr(self, mq: MessageQueue) -> str:
        """The address of the broker that serves `mq` (its master).  A light message queue
        has no route: its broker is looked up by name in the name server's cluster table."""
        if not is_lmq(mq.topic):
            return await self.instance.find_master_addr(mq.broker_name, mq.topic)
        addr = self.instance.master_addr(mq.broker_name)
        if addr is None:
            data = (await self.instance.api.get_cluster_info()).broker_addr_table.get(
                mq.broker_name
            )
            addr = data.master_addr if data is not None else None
        if addr is None:
            raise NoRouteError(0, f"no master known for broker {mq.broker_name}", request_code=None)
        return addr

    # ------------------------------------------------------------------ offsets

    async def min_offset(self, mq: MessageQueue) -> int:
        """The oldest offset still stored."""
        return await self.instance.api.get_min_offset(await self.master_addr(mq), mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        """The offset the next message stored in `mq` will get."""
        return await self.instance.api.get_max_offset(await self.master_addr(mq), mq)

    async def offset_at(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message stored at or after `timestamp_ms`."""
        addr = await self.master_addr(mq)
        return await self.instance.api.search_offset(addr, mq, timestamp_ms)

    async def committed(self, group: str, mq: MessageQueue) -> int | None:
        """`group`'s offset for `mq` stored on the broker; None if it has none (a RocketMQ
        4.x broker's 0 for "none" included, see `longboat.client.consume_from`)."""
        addr = await self.master_addr(mq)
        return await committed_offset(self.instance.api, addr, group, mq)

    async def commit(self, group: str, mq: MessageQueue, offset: int) -> None:
        """Store `offset` (the next to consume) as `group`'s offset for `mq`."""
        addr = await self.master_addr(mq)
        await self.instance.api.update_consumer_offset(addr, group, mq, offset)

    # ------------------------------------------------------------------ reading

    async def pull(
        self,
        mq: MessageQueue,
        offset: int,
        *,
        group: str,
        max_msgs: int,
        expression: TagExpression | str = "*",
        suspend: float = 0.0,
        commit_offset: int | None = None,
        decode: bool = True,
        timeout: float | None = None,
    ) -> PullResult:
        """Up to `max_msgs` messages of `mq` from `offset` on (see `ClientAPI.pull` for the
        options); `timeout` defaults to the request timeout plus `suspend`."""
        if timeout is None:
            timeout = self.config.request_timeout + suspend
        return await self.instance.api.pull(
            await self.master_addr(mq),
            mq,
            offset,
            group=group,
            max_msgs=max_msgs,
            timeout=timeout,
            expression=expression,
            suspend=suspend,
            commit_offset=commit_offset,
            lite=True,
            decode=decode,
        )

    async def has_unique_key(self, topic: str, key: str) -> bool:
        """Whether any master of `topic` holds a message whose UNIQ_KEY is `key`."""
        route = await self.instance.route(topic, refresh=True)
        addrs = [a for b in route.brokers if (a := b.master_addr)]
        found = await asyncio.gather(
            *(
                self.instance.api.query_message(addr, topic, key, max_num=1, unique_key=True)
                for addr in addrs
            )
        )
        return any(found)
