"""Helpers of the push consumer's end-to-end tests: topics, sending, and recording deliveries."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.push import PushConsumer
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MessageQueue

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
