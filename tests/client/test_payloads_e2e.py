"""Typed payloads through a real broker: each codec from `send(topic, obj)` to a listener
annotated with the type, and a body that does not decode through retries to the DLQ."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from longboat.client import Message
from longboat.client.payloads import CONTENT_TYPE, JSON, decode
from longboat.client.producer import Producer
from longboat.client.push import ConsumeFrom, PushConsumer
from longboat.client.push.redelivery import FAILURE_REASON
from longboat.client.sync import Producer as BlockingProducer
from longboat.client.sync import PushConsumer as BlockingPushConsumer
from longboat.protocol.message import MessageExt

from .client_e2e import config_for, read_topic, unique
from .payload_types import OrderDC, OrderModel, OrderStruct
from .push_support import create_topic


class Received:
    """What a payload listener got, with a wait on its arriving (listeners may run on threads)."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()

    def add(self, item: Any) -> None:
        self.items.append(item)
        self._loop.call_soon_threadsafe(self._changed.set)

    async def wait_for(self, count: int, timeout: float = 30.0) -> list[Any]:
        async with asyncio.timeout(timeout):
            while len(self.items) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.items


def consumer(namesrv: str, topic: str, **options: Any) -> PushConsumer:
    c = PushConsumer(
        unique("g"), config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET, **options
    )
    c.subscribe(topic)
    return c


async def test_a_dataclass_reaches_a_plain_listener(namesrv: str) -> None:
    topic = await create_topic(namesrv, 2)
    received = Received()
    c = consumer(namesrv, topic)

    def on_order(order: OrderDC) -> None:  # on the consumer's threads
        received.add(order)

    c.register_listener(on_order)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        await producer.send(topic, OrderDC(1, "tea"))
        await producer.send(Message.of(topic, OrderDC(2, "milk"), tags="paid"))
    async with c:
        got = await received.wait_for(2)
    assert sorted(got, key=lambda o: o.id) == [OrderDC(1, "tea"), OrderDC(2, "milk")]
    stored = await read_topic(namesrv, topic, 2)
    # What another language reads: JSON, and a property that says so.
    assert {m.properties[CONTENT_TYPE] for m in stored} == {JSON}
    assert sorted(m.body for m in stored) == [
        b'{"id":1,"item":"tea"}',
        b'{"id":2,"item":"milk"}',
    ]
    # A lite pull consumer's (or queue reader's) messages decode with the same helper.
    assert sorted(decode(m, OrderDC).id for m in stored) == [1, 2]


async def test_a_msgspec_struct_reaches_an_async_listener(namesrv: str) -> None:
    topic = await create_topic(namesrv, 2)
    received = Received()
    c = consumer(namesrv, topic)

    async def on_order(order: OrderStruct) -> None:  # on the event loop
        received.add(order)

    c.register_listener(on_order)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        await producer.send(topic, OrderStruct(1, "tea"))
    async with c:
        assert await received.wait_for(1) == [OrderStruct(1, "tea")]


async def test_a_pydantic_model_reaches_an_orderly_listener_with_its_message(
    namesrv: str,
) -> None:
    topic = await create_topic(namesrv, 1, order=True)
    received = Received()
    c = consumer(namesrv, topic)

    def on_order(order: OrderModel, msg: MessageExt) -> None:
        received.add((order, msg.keys))

    c.register_orderly(on_order)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for i in range(3):
            await producer.send(Message.of(topic, OrderModel(id=i, item="tea"), keys=f"o{i}"))
    async with c:
        got = await received.wait_for(3)
    assert got == [(OrderModel(id=i, item="tea"), f"o{i}") for i in range(3)]


async def test_a_body_that_does_not_decode_is_retried_then_dead_lettered_with_its_reason(
    namesrv_short_delays: str,
) -> None:
    namesrv = namesrv_short_delays
    topic = await create_topic(namesrv, 2)
    received = Received()
    c = consumer(namesrv, topic, max_reconsume_times=2)

    async def on_order(order: OrderStruct) -> None:
        received.add(order)

    c.register_listener(on_order)
    async with c, Producer(unique("pg"), config=config_for(namesrv)) as producer:
        await producer.send(Message(topic, b'{"id": "one", "item": "tea"}'))
        dlq = await read_topic(namesrv, f"%DLQ%{c.group}", 1, timeout=60)
        # The consumer goes on: a good order sent after the bad one's last try is delivered.
        await producer.send(topic, OrderStruct(2, "milk"))
        assert await received.wait_for(1) == [OrderStruct(2, "milk")]
        assert c.listener_error is None
    [dead] = dlq
    assert dead.body == b'{"id": "one", "item": "tea"}'
    # Through the retry topic twice (max_reconsume_times=2), then to the DLQ.
    assert dead.reconsume_times == 2
    assert dead.properties[FAILURE_REASON].startswith("cannot decode as OrderStruct: Expected")
    assert "$.id" in dead.properties[FAILURE_REASON]


async def test_the_blocking_facade_sends_and_receives_payloads(namesrv: str) -> None:
    topic = await create_topic(namesrv, 1)
    got: list[OrderDC] = []
    arrived = threading.Event()

    def on_order(order: OrderDC) -> None:
        got.append(order)
        arrived.set()

    def blocking_round_trip() -> bool:
        with BlockingProducer(unique("pg"), config=config_for(namesrv)) as producer:
            assert producer.send(topic, OrderDC(7, "jam")).ok
        consumer = BlockingPushConsumer(
            unique("g"), config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET
        )
        consumer.subscribe(topic)
        consumer.register_listener(on_order)
        with consumer:
            return arrived.wait(30)

    assert await asyncio.to_thread(blocking_round_trip)
    assert got == [OrderDC(7, "jam")]


async def test_an_orderly_body_that_does_not_decode_is_dead_lettered_with_its_reason(
    namesrv: str,
) -> None:
    topic = await create_topic(namesrv, 1, order=True)
    received = Received()
    c = consumer(namesrv, topic, max_reconsume_times=1, suspend_current_queue_time=0.1)

    def on_order(order: OrderModel) -> None:
        received.add(order)

    c.register_orderly(on_order)
    async with c, Producer(unique("pg"), config=config_for(namesrv)) as producer:
        await producer.send(Message(topic, b"[]"))
        await producer.send(topic, OrderModel(id=2, item="milk"))
        # In order: the good one only after the bad one was given up.
        assert await received.wait_for(1) == [OrderModel(id=2, item="milk")]
        [dead] = await read_topic(namesrv, f"%DLQ%{c.group}", 1, timeout=60)
    assert dead.body == b"[]"
    assert dead.properties[FAILURE_REASON].startswith("cannot decode as OrderModel")
