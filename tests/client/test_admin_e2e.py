"""Admin against the real name server and broker: topics, progress, resets, lookups."""

from __future__ import annotations

import asyncio
import time

import pytest

from longboat.client import Message, MessageExt
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.errors import GroupOnlineError, MessageNotFoundError
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.client.sync import Admin as BlockingAdmin
from longboat.client.sync import LitePullConsumer as BlockingLitePull
from longboat.client.sync import Producer as BlockingProducer

from .client_e2e import config_for, unique


async def test_create_topic_is_routed_and_listed(namesrv: str) -> None:
    topic = unique("AT")
    async with Admin(config=config_for(namesrv)) as admin:
        brokers = await admin.create_topic(topic, queue_nums=3)
        assert brokers
        route = await admin.route(topic)
        assert {q.broker_name for q in route.queue_datas} == set(brokers)
        assert all(q.write_queue_nums == 3 for q in route.queue_datas)
        assert topic in await admin.topics()
        info = await admin.cluster_info()
        assert set(brokers) <= set(info.broker_addr_table)
        # Updating changes the queue count in place.
        await admin.create_topic(topic, queue_nums=5)
        assert all(q.read_queue_nums == 5 for q in (await admin.route(topic)).queue_datas)


async def test_group_progress_and_reset(namesrv: str) -> None:
    topic, group = unique("AT"), unique("g")
    config = config_for(namesrv)
    async with Admin(config=config) as admin:
        await admin.create_topic(topic, queue_nums=1)
        async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
            for i in range(10):
                if i == 6:  # store times are in ms: keep the boundary between 5 and 6 distinct
                    await asyncio.sleep(0.01)
                    boundary_ms = int(time.time() * 1000)
                    await asyncio.sleep(0.01)
                await producer.send(Message(topic, f"{i}".encode()))
        consumer = LitePullConsumer(group, config=config_for(namesrv), auto_commit=False)
        consumer.subscribe(topic)
        await consumer.start()
        try:
            [mq] = await consumer.fetch_message_queues(topic)
            await consumer.commit({mq: 4})
            [row] = await admin.group_progress(group, topic)
            assert (row.mq, row.broker_offset, row.consumer_offset, row.lag) == (mq, 10, 4, 6)
            assert row.lag_time is not None and 0 <= row.lag_time < 60
            assert abs(row.last_timestamp / 1000 - time.time()) < 60
            with pytest.raises(GroupOnlineError, match="stop them first"):
                await admin.reset_offsets(group, topic, "earliest")
        finally:
            await consumer.shutdown()
        assert await admin.reset_offsets(group, topic, "earliest") == {mq: 0}
        assert await admin.reset_offsets(group, topic, "latest") == {mq: 10}
        assert await admin.reset_offsets(group, topic, int(time.time() * 1000) - 600_000) == {mq: 0}
        # To a time: the first message stored at or after it.
        assert await admin.reset_offsets(group, topic, boundary_ms) == {mq: 6}
        assert await admin.reset_offsets(group, topic, "earliest") == {mq: 0}
        [row] = await admin.group_progress(group, topic)
        assert row.consumer_offset == 0 and row.lag == 10


async def test_lookup_by_id_and_key(namesrv: str) -> None:
    topic = unique("AT")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=2)
        async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
            sent = await producer.send(Message(topic, b"find me", keys=["order-7", "user-3"]))
            await producer.send(Message(topic, b"other", keys="order-8"))
        by_uniq = await admin.message_by_id(sent.msg_id, topic)
        by_offset = await admin.message_by_id(sent.offset_msg_id)
        assert by_uniq.body == by_offset.body == b"find me"
        assert by_offset.msg_id == sent.msg_id
        [hit] = await admin.messages_by_key(topic, "user-3")
        assert hit.body == b"find me"
        assert await admin.messages_by_key(topic, "order-9") == []
        # Without a topic, an id that cannot be an offset id is searched in every topic.
        with pytest.raises(MessageNotFoundError, match=r"no message has it as UNIQ_KEY in any"):
            await admin.message_by_id("not-an-id")


def test_blocking_facade(namesrv: str) -> None:
    topic, group = unique("BT"), unique("g")
    with BlockingAdmin(config=config_for(namesrv)) as admin:
        admin.create_topic(topic, queue_nums=2)
    with BlockingProducer(unique("pg"), config=config_for(namesrv)) as producer:
        results = [producer.send(Message(topic, f"{i}".encode())) for i in range(5)]
        results.append(producer.send_async(Message(topic, b"5")).result(10))
    with BlockingLitePull(
        group, config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET
    ) as consumer:
        consumer.subscribe(topic)
        got: list[MessageExt] = []
        deadline = time.monotonic() + 15
        while len(got) < 6 and time.monotonic() < deadline:
            got += consumer.poll(timeout=0.5)
    assert sorted(m.body for m in got) == [f"{i}".encode() for i in range(6)]
    assert {m.msg_id for m in got} == {r.msg_id for r in results}
