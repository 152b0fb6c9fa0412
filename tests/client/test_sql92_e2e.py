"""Our consumers subscribe by SQL92 (`subscribe(topic, sql=...)`) against a broker with
enablePropertyFilter: only matching messages arrive, on the push consumer (subscription from
the heartbeat and in each pull) and the lite pull consumer; a bad selector is the caller's
error at `subscribe`, before anything reaches a broker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from conftest import Cluster
from longboat.client import ClientUsageError, Message, MessageExt
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, PushConsumer

from .client_e2e import config_for, unique
from .push_support import Deliveries, create_topic

SELECTOR = "region = 'eu' AND amount BETWEEN 10 AND 100"


async def send_orders(namesrv: str, topic: str) -> None:
    orders = [("eu", 50), ("us", 50), ("eu", 500), ("eu", 10), (None, 20), ("eu", 100)]
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for i, (region, amount) in enumerate(orders):
            props = {"amount": str(amount)} | ({"region": region} if region else {})
            await producer.send(Message(topic, f"o{i}".encode(), properties=props))


async def send_markers(namesrv: str, topic: str, queues: int) -> None:
    """One message matching SELECTOR at the end of each queue, `marker-<queue id>`."""
    props = {"region": "eu", "amount": "50"}
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for q in range(queues):
            await producer.send(
                Message(topic, f"marker-{q}".encode(), properties=props),
                selector=lambda mqs, msg, arg: next(mq for mq in mqs if mq.queue_id == arg),
                arg=q,
            )


async def test_push_consumer_by_sql_gets_only_matching_messages(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    namesrv = loopback_cluster(enable_property_filter=True).namesrv_addr
    topic = await create_topic(namesrv, 2)
    await send_orders(namesrv, topic)
    deliveries = Deliveries()
    consumer = PushConsumer(
        unique("g"), config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.subscribe(topic, sql=SELECTOR)

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        deliveries.record("c", ctx.mq, msgs)

    consumer.register_listener(listener)
    async with consumer:
        await deliveries.wait_for_bodies({"o0", "o3", "o5"})
        # A matching marker behind every queue's orders: once both arrived, each queue was
        # read past every order, so whatever else was to be delivered has been.
        await send_markers(namesrv, topic, 2)
        await deliveries.wait_for_bodies({"marker-0", "marker-1"})
    assert sorted(deliveries.bodies()) == ["marker-0", "marker-1", "o0", "o3", "o5"]


async def test_lite_pull_consumer_by_sql_gets_only_matching_messages(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    namesrv = loopback_cluster(enable_property_filter=True).namesrv_addr
    topic = await create_topic(namesrv, 2)
    await send_orders(namesrv, topic)
    consumer = LitePullConsumer(
        unique("g"), config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.subscribe(topic, sql=SELECTOR)
    got: list[bytes] = []
    async with consumer:
        async with asyncio.timeout(20):
            while len(got) < 3:
                got += [m.body for m in await consumer.poll(timeout=1.0)]
        got += [m.body for m in await consumer.poll(timeout=0.5)]
    assert sorted(got) == [b"o0", b"o3", b"o5"]


def test_a_bad_selector_is_refused_at_subscribe() -> None:
    consumer = PushConsumer(unique("g"), config=config_for("127.0.0.1:1"))
    with pytest.raises(ClientUsageError, match="cannot be compared"):
        consumer.subscribe("T", sql="amount > 'ten'")
    with pytest.raises(ClientUsageError, match="not both"):
        consumer.subscribe("T", "TagA", sql="amount > 10")
    lite = LitePullConsumer(unique("g"), config=config_for("127.0.0.1:1"))
    with pytest.raises(ClientUsageError, match="Unexpected"):
        lite.subscribe("T", sql="amount >")
