"""Longboat's `PopConsumer` against a real broker: receive, ack, change the invisible time,
redelivery with the attempt counted, orderly pops (`orderly=True`) — and the pop state
through a SIGKILL of the broker process: what was acked is never delivered again, what was
not comes back, and an orderly queue's unacked messages still come before its later ones."""

from __future__ import annotations

import time

from broker.test_replication_faults import (  # and `group`, its fixture of a broker group
    BrokerGroup,
    config_for,
    create_topic,
    group,  # noqa: F401
)
from longboat.client import BrokerError, Message
from longboat.client.pop import PopConsumer, PoppedMessage
from longboat.client.producer import Producer
from longboat.protocol import ResponseCode

from .client_e2e import unique
from .test_lite_pull_e2e import new_topic, produce


async def receive_n(
    consumer: PopConsumer, topic: str, n: int, invisible_time: float = 60.0
) -> list[PoppedMessage]:
    got: list[PoppedMessage] = []
    deadline = time.monotonic() + 20
    while len(got) < n:
        assert time.monotonic() < deadline, f"only {len(got)} of {n} received"
        got += await consumer.receive(topic, wait=2.0, invisible_time=invisible_time)
    return got


async def test_receive_ack_and_change_invisible_time(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=2)
    await produce(namesrv, topic, [b"a", b"b"], queue_id=0)
    await produce(namesrv, topic, [b"c"], queue_id=1)
    async with PopConsumer(unique("pop"), namesrv_addrs=namesrv) as consumer:
        got = await receive_n(consumer, topic, 3)
        assert sorted(m.body for m in got) == [b"a", b"b", b"c"]
        assert all(m.reconsume_times == 0 for m in got)
        by_body = {m.body: m for m in got}
        await consumer.ack(by_body[b"a"])
        await consumer.ack(by_body[b"c"])
        # "b" again at once; its first checkpoint no longer acks it.
        first = PoppedMessage(
            by_body[b"b"].message, by_body[b"b"].broker_addr, by_body[b"b"].checkpoint
        )
        await consumer.change_invisible_time(by_body[b"b"], 0)
        [again] = await receive_n(consumer, topic, 1)
        assert again.body == b"b" and again.reconsume_times == 1
        try:
            await consumer.ack(first)
            raise AssertionError("a stale checkpoint acked")
        except BrokerError as exc:
            assert exc.code == ResponseCode.NO_MESSAGE
        await consumer.ack(again)
        # Everything acked: nothing more comes.
        assert await consumer.receive(topic, wait=0.5) == []


async def test_orderly_receive_holds_a_queue_until_its_messages_are_acked(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=2)
    await produce(namesrv, topic, [b"a0", b"a1", b"a2"], queue_id=0)
    await produce(namesrv, topic, [b"b0"], queue_id=1)
    async with PopConsumer(unique("pop"), orderly=True, namesrv_addrs=namesrv) as consumer:
        first = await receive_n(consumer, topic, 4, invisible_time=3.0)
        assert [m.body for m in first if m.message.queue_id == 0] == [b"a0", b"a1", b"a2"]
        assert all(m.reconsume_times == 0 for m in first)
        by_body = {m.body: m for m in first}
        await consumer.ack(by_body[b"a0"])
        await consumer.ack(by_body[b"b0"])
        # a1 failed: it and a2 behind it are left; once their time ran out both come back, a1
        # first, each counted; a3, sent meanwhile, waits behind them.
        await produce(namesrv, topic, [b"a3"], queue_id=0)
        again = await receive_n(consumer, topic, 2)
        assert [(m.body, m.reconsume_times) for m in again] == [(b"a1", 1), (b"a2", 1)]
        await consumer.ack(again[0])
        await consumer.ack(again[1])
        [last] = await receive_n(consumer, topic, 1)
        assert (last.body, last.reconsume_times) == (b"a3", 0)
        await consumer.ack(last)
        assert await consumer.receive(topic, wait=0.5) == []


async def test_pop_state_survives_a_sigkill(group: BrokerGroup) -> None:  # noqa: F811
    group.start("a", "ASYNC_MASTER")
    topic = unique("PopKill")
    await create_topic(group.namesrv, topic)
    async with Producer(unique("pg"), config=config_for(group.namesrv)) as producer:
        for i in range(12):
            await producer.send(Message(topic, f"m{i}".encode()))
    consumer_group = unique("pop")
    async with PopConsumer(consumer_group, config=config_for(group.namesrv)) as consumer:
        got = await receive_n(consumer, topic, 12, invisible_time=600.0)
        acked = {m.body for m in got[::2]}
        for m in got[::2]:
            await consumer.ack(m)
    group.kill("a")
    group.start("a", "ASYNC_MASTER")
    # After the restart every un-acked message is visible at once (their long invisible
    # time is not kept); the acked ones never come back.
    async with PopConsumer(consumer_group, config=config_for(group.namesrv)) as consumer:
        again = await receive_n(consumer, topic, 6)
        assert {m.body for m in again} == {m.body for m in got} - acked
        assert all(m.reconsume_times == 1 for m in again)
        for m in again:
            await consumer.ack(m)
        assert await consumer.receive(topic, wait=0.5) == []


async def test_orderly_pop_state_survives_a_sigkill(group: BrokerGroup) -> None:  # noqa: F811
    group.start("a", "ASYNC_MASTER")
    topic = unique("PopOrderKill")
    await create_topic(group.namesrv, topic)
    await produce(group.namesrv, topic, [b"o0", b"o1", b"o2"])
    consumer_group = unique("pop")
    config = config_for(group.namesrv)
    async with PopConsumer(consumer_group, orderly=True, config=config) as consumer:
        first = await receive_n(consumer, topic, 3, invisible_time=600.0)
        assert [m.body for m in first] == [b"o0", b"o1", b"o2"]
        await consumer.ack(first[0])
    group.kill("a")
    group.start("a", "ASYNC_MASTER")
    await produce(group.namesrv, topic, [b"o3"])
    # o1 and o2 were out (for 600 s, not kept): visible at once after the restart, counted,
    # and still ahead of o3, which comes only once they are acked; o0 never comes back.
    async with PopConsumer(consumer_group, orderly=True, config=config) as consumer:
        again = await receive_n(consumer, topic, 2)
        assert [(m.body, m.reconsume_times) for m in again] == [(b"o1", 1), (b"o2", 1)]
        for m in again:
            await consumer.ack(m)
        [last] = await receive_n(consumer, topic, 1)
        assert (last.body, last.reconsume_times) == (b"o3", 0)
        await consumer.ack(last)
        assert await consumer.receive(topic, wait=0.5) == []
