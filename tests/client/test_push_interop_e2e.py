"""Interop with RocketMQ's Node.js client ali-ons, both directions, over our broker."""

from __future__ import annotations

import asyncio

import pytest

from longboat.client import Message
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeFrom, PushConsumer
from longboat.protocol.message import MessageExt
from peers.ali_ons import run_node_peer, start_node_peer

from .client_e2e import config_for, unique
from .push_support import Deliveries, create_topic

pytestmark = [
    pytest.mark.node,
    pytest.mark.usefixtures("node_peer"),
]


async def test_push_consumer_receives_what_ali_ons_produces(namesrv: str) -> None:
    topic, group = await create_topic(namesrv, 4), unique("g")
    deliveries = Deliveries()
    consumer = PushConsumer(
        group, config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.subscribe(topic, "TagA")

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        deliveries.record("ours", ctx.mq, msgs)

    consumer.register_listener(listener)
    await consumer.start()
    try:
        for tag, count in (("TagA", 10), ("TagB", 5)):
            events = await asyncio.to_thread(
                run_node_peer,
                "produce.js",
                *("--namesrv", namesrv, "--topic", topic, "--count", str(count)),
                *("--tags", tag, "--body", f"from-ali-ons-{tag}", "--keys", tag),
                *("--timeout-ms", "30000"),
                timeout=40,
            )
            assert sum(e["event"] == "sent" for e in events) == count
        await deliveries.wait(lambda: len(deliveries.all) >= 10)
    finally:
        await consumer.shutdown()
    # Only TagA passed the subscription; ali-ons' bodies and keys arrive intact.
    assert len(deliveries.all) == 10
    assert set(deliveries.bodies()) == {"from-ali-ons-TagA"}


async def test_ali_ons_consumer_receives_what_we_produce(namesrv: str) -> None:
    topic, group = await create_topic(namesrv, 4), unique("g")
    bodies = [f"from-longboat-{i}" for i in range(12)]
    args = ("--namesrv", namesrv, "--topic", topic, "--group", group, "--tags", "TagA")
    with start_node_peer(
        "consume.js", *args, "--expect", str(len(bodies)), "--timeout-ms", "60000"
    ) as peer:
        await asyncio.to_thread(peer.wait_for, "ready", 40)
        async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
            for body in bodies:
                await producer.send(Message(topic, body.encode(), tags="TagA", keys=body))
            await producer.send(Message(topic, b"filtered-out", tags="TagB"))
        events = await asyncio.to_thread(peer.wait, 60)
    got = [e for e in events if e["event"] == "msg"]
    assert sorted(e["body"] for e in got) == sorted(bodies)
    assert {e["tags"] for e in got} == {"TagA"}
