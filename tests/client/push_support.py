"""Helpers of the push consumer's end-to-end tests: topics, sending, and recording deliveries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from longboat.client import ClientConfig, Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeFrom, ConsumeResult, PushConsumer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import ResetOffsetRequestHeader
from longboat.protocol.message import MessageExt
from longboat.protocol.table_bodies import decode_offset_table
from longboat.protocol.types import MessageQueue
from longboat.remoting import RemotingClient

from .client_e2e import config_for, unique


async def create_topic(namesrv: str, queues: int = 8, *, order: bool = False) -> str:
    topic = unique("T")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=queues, order=order)
    return topic


async def send(
    namesrv: str,
    topic: str,
    bodies: list[str],
    *,
    tags: str | None = None,
    sharding: Callable[[str], str] | None = None,
) -> None:
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for body in bodies:
            await producer.send(
                Message(topic, body.encode(), tags=tags, keys=body),
                sharding_key=sharding(body) if sharding else None,
            )


@dataclass(frozen=True, slots=True)
class Delivery:
    consumer: str
    body: str
    topic: str
    mq: MessageQueue
    queue_offset: int
    reconsume_times: int


class Deliveries:
    """Every delivery to any listener of a test, with event-driven waits (no polling)."""

    def __init__(self) -> None:
        self.all: list[Delivery] = []
        self._changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def record(self, consumer: str, mq: MessageQueue, msgs: list[MessageExt]) -> None:
        """Callable from any thread (plain listeners run on worker threads)."""
        for m in msgs:
            self.all.append(
                Delivery(consumer, m.body.decode(), m.topic, mq, m.queue_offset, m.reconsume_times)
            )
        self._loop.call_soon_threadsafe(self._changed.set)

    def bodies(self, consumer: str | None = None) -> list[str]:
        return [d.body for d in self.all if consumer is None or d.consumer == consumer]

    async def wait(self, done: Callable[[], bool], timeout: float = 30.0) -> None:
        async with asyncio.timeout(timeout):
            while not done():
                self._changed.clear()
                await self._changed.wait()

    async def wait_for_bodies(self, wanted: set[str], timeout: float = 30.0) -> None:
        await self.wait(lambda: wanted <= set(self.bodies()), timeout)


def failing_consumer(
    namesrv: str, group: str, topic: str, max_reconsume_times: int
) -> tuple[PushConsumer, Deliveries]:
    """A push consumer of `topic` (not started) whose listener records every delivery in the
    `Deliveries` returned and asks for a retry (RECONSUME_LATER) of the body "flaky" once and
    of "poison" every time, so "flaky" is consumed on its retry and "poison" ends as a dead
    letter; any other body is consumed at once."""
    deliveries = Deliveries()
    failures = {"flaky": 1, "poison": 10**6}
    consumer = PushConsumer(
        group, config=config_for(namesrv), max_reconsume_times=max_reconsume_times
    )
    consumer.subscribe(topic)

    def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
        deliveries.record("c", ctx.mq, msgs)
        body = msgs[0].body.decode()
        if failures.get(body, 0) > 0:
            failures[body] -= 1
            return ConsumeResult.RECONSUME_LATER
        return ConsumeResult.SUCCESS

    consumer.register_listener(listener)
    return consumer, deliveries


async def positioned(*consumers: PushConsumer, timeout: float = 15.0) -> None:
    """Wait until every owned queue of these consumers knows its start offset, so messages
    sent from now on are delivered even to consume_from=LAST_OFFSET consumers."""
    async with asyncio.timeout(timeout):
        while not all(
            c.process_queues()
            and all(pq.committed_offset is not None for pq in c.process_queues().values())
            for c in consumers
        ):
            await asyncio.sleep(0.05)


async def settled(
    consumers: list[PushConsumer], queues_per_topic: dict[str, int], timeout: float = 30.0
) -> None:
    """Wait until these members partition each topic's queues: every queue owned by exactly
    one of them. Rebalances after a membership change finish at different times on each
    member, so a queue may briefly be held by two (or none) before this holds."""

    def partition() -> dict[str, tuple[int, int]]:
        found = {}
        for topic in queues_per_topic:
            owned = [{mq for mq in c.process_queues() if mq.topic == topic} for c in consumers]
            found[topic] = (sum(len(o) for o in owned), len(set().union(*owned)))
        return found

    want = {topic: (n, n) for topic, n in queues_per_topic.items()}
    try:
        async with asyncio.timeout(timeout):
            while partition() != want:
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"(owned, distinct) per topic {partition()} != {want}") from None


async def broker_driven_reset_restarts_a_live_group(namesrv: str, broker_addr: str) -> int:
    """A live push consumer of a 1-queue topic consumed everything; the broker at
    `broker_addr` is asked to reset the group to a time between two halves
    (INVOKE_BROKER_TO_RESET_OFFSET, as `mqadmin resetOffsetByTime` asks it) and tells the
    member (RESET_CONSUMER_CLIENT_OFFSET): the messages from the offset the broker chose are
    delivered again, and the group's committed offset ends at the queue's end.  Returns that
    offset (the queue holds 3 messages stored before the time, then 3 after it)."""
    topic, group = await create_topic(namesrv, 1), unique("reset_g")
    first, second = [f"first-{i}" for i in range(3)], [f"second-{i}" for i in range(3)]
    await send(namesrv, topic, first)
    await asyncio.sleep(0.05)
    between_ms = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    await send(namesrv, topic, second)
    deliveries = Deliveries()
    config = ClientConfig(
        [namesrv],
        client_ip="127.0.0.1",
        instance_name=unique("c"),
        persist_consumer_offset_interval=0.1,
    )
    consumer = PushConsumer(group, config=config, consume_from=ConsumeFrom.FIRST_OFFSET)
    consumer.subscribe(topic)
    consumer.register_listener(lambda msgs, ctx: deliveries.record("c", ctx.mq, msgs))
    await consumer.start()
    admin = RemotingClient()
    try:
        await deliveries.wait(lambda: len(deliveries.all) == 6)
        # RocketMQ resets only a group with an offset on every queue: wait for the commit.
        async with Admin(config=config_for(namesrv)) as reader, asyncio.timeout(10):
            while [p.consumer_offset for p in await reader.group_progress(group, topic)] != [6]:
                await asyncio.sleep(0.05)
        header = ResetOffsetRequestHeader(topic, group, between_ms, isForce=True)
        request = RemotingCommand.request(
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext()
        )
        response = await admin.request(broker_addr, request, 10)
        assert response.code == ResponseCode.SUCCESS, response.remark
        (reset_to,) = decode_offset_table(response.body).values()
        await deliveries.wait(lambda: len(deliveries.all) == 12 - reset_to, timeout=30)
        assert deliveries.bodies()[6:] == (first + second)[reset_to:]
    finally:
        await admin.close()
        await consumer.shutdown()
    (mq,) = {d.mq for d in deliveries.all}
    async with Admin(config=config_for(namesrv)) as reader:
        progress = {p.mq: p.consumer_offset for p in await reader.group_progress(group, topic)}
    # A helper module: pytest does not rewrite its asserts, so the message says what was seen.
    assert progress == {mq: 6}, f"committed {progress} after a reset to {reset_to}"
    return reset_to
