"""The push consumer's remaining RocketMQ details, against a real broker: max_reconsume_times'
-1 / 0 meanings, pull_interval after FOUND only, filtered-out queues showing no lag
(correctTagsOffset)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Cluster
from longboat.client import ClientUsageError
from longboat.client.admin import Admin
from longboat.client.consume import pull_loop
from longboat.client.consumer_settings import PushConsumerSettings
from longboat.client.push import (
    ConcurrentContext,
    ConsumeFrom,
    ConsumeResult,
    MessageModel,
    OrderlyContext,
    PushConsumer,
)
from longboat.client.push.orderly import OrderlyConsumeService
from longboat.protocol.message import MessageExt

from .client_e2e import config_for, read_topic, unique
from .push_support import Deliveries, create_topic, send


def test_max_reconsume_times_minus_one_is_the_default_and_below_is_refused() -> None:
    assert PushConsumerSettings(max_reconsume_times=-1).max_reconsume_times is None
    assert PushConsumerSettings(max_reconsume_times=0).max_reconsume_times == 0
    with pytest.raises(ClientUsageError, match="max_reconsume_times"):
        PushConsumerSettings(max_reconsume_times=-2)


async def failing_consumer(
    namesrv: str, topic: str, group: str, deliveries: Deliveries, **options: Any
) -> PushConsumer:
    consumer = PushConsumer(
        group, config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET, **options
    )
    consumer.subscribe(topic)

    async def fail(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
        deliveries.record("c", ctx.mq, msgs)
        return ConsumeResult.RECONSUME_LATER

    consumer.register_listener(fail)
    return consumer


async def test_max_reconsume_times_zero_dead_letters_on_the_first_failure(
    namesrv_short_delays: str,
) -> None:
    namesrv = namesrv_short_delays
    topic, group = await create_topic(namesrv, 1), unique("g")
    deliveries = Deliveries()
    consumer = await failing_consumer(namesrv, topic, group, deliveries, max_reconsume_times=0)
    await send(namesrv, topic, ["once"])
    async with consumer:
        dlq = await read_topic(namesrv, f"%DLQ%{group}", 1, timeout=30)
        await asyncio.sleep(1.0)  # retries would come within 100 ms delay levels
    assert [m.body for m in dlq] == [b"once"]
    assert deliveries.bodies() == ["once"]


async def test_max_reconsume_times_minus_one_retries_instead_of_dead_lettering(
    namesrv_short_delays: str,
) -> None:
    namesrv = namesrv_short_delays
    topic, group = await create_topic(namesrv, 1), unique("g")
    deliveries = Deliveries()
    consumer = await failing_consumer(namesrv, topic, group, deliveries, max_reconsume_times=-1)
    await send(namesrv, topic, ["again"])
    async with consumer:
        await deliveries.wait(lambda: len(deliveries.bodies()) >= 4, timeout=30)
    assert [d.reconsume_times for d in deliveries.all[:4]] == [0, 1, 2, 3]


async def test_pull_interval_applies_after_found_only(namesrv: str) -> None:
    """An empty long poll (the broker's hold expired) is followed by the next pull at once:
    a message sent during what would have been the pause arrives without waiting for it."""
    topic = await create_topic(namesrv, 1)
    deliveries = Deliveries()
    consumer = PushConsumer(
        unique("g"),
        config=config_for(namesrv),
        pull_interval=30.0,
        broker_suspend_timeout=0.5,
        pull_timeout=5.0,
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        deliveries.record("c", ctx.mq, msgs)

    consumer.register_listener(listener)
    async with consumer:
        await asyncio.sleep(2.0)  # several holds expired with nothing found
        started = time.monotonic()
        await send(namesrv, topic, ["prompt"])
        await deliveries.wait_for_bodies({"prompt"}, timeout=10)
        assert time.monotonic() - started < 10


async def test_a_queue_whose_messages_are_all_filtered_out_shows_no_lag(namesrv: str) -> None:
    """Every message is tagged B, the group takes A: nothing is delivered, and the group's
    committed offset still follows the queue (Java's correctTagsOffset), so no lag shows."""
    topic, group = await create_topic(namesrv, 1), unique("g")
    await send(namesrv, topic, [f"b{i}" for i in range(5)], tags="B")
    deliveries = Deliveries()
    consumer = PushConsumer(
        group,
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        broker_suspend_timeout=1.0,
        pull_timeout=5.0,
    )
    consumer.subscribe(topic, "A")

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        deliveries.record("c", ctx.mq, msgs)

    consumer.register_listener(listener)
    async with consumer, Admin(config=config_for(namesrv)) as admin:
        async with asyncio.timeout(20):
            while True:
                rows = await admin.group_progress(group, topic, with_lag_time=False)
                if rows and rows[0].consumer_offset == 5:
                    break
                await asyncio.sleep(0.2)
    assert [r.lag for r in rows] == [0]
    assert deliveries.bodies() == []


async def test_orderly_queue_is_not_pulled_while_its_broker_lock_is_lost(
    loopback_cluster: Callable[..., Cluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another client takes the queue's broker lock: once this consumer learns it (its next
    renewal), it stops pulling the queue — a message sent meanwhile is not fetched — and
    asks again every LOCK_LOST_RETRY_S; when the lock is free again, it resumes."""
    monkeypatch.setattr(pull_loop, "LOCK_LOST_RETRY_S", 0.5)
    cluster = loopback_cluster()
    namesrv = cluster.namesrv_addr
    topic, group = await create_topic(namesrv, 1), unique("g")
    deliveries = Deliveries()
    consumer = PushConsumer(
        group,
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        broker_suspend_timeout=0.5,
        pull_timeout=5.0,
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> None:
        deliveries.record("c", ctx.mq, msgs)

    consumer.register_listener(listener, orderly=True)
    await send(namesrv, topic, ["first"])
    async with consumer:
        await deliveries.wait_for_bodies({"first"})
        [(mq, pq)] = [(q, p) for q, p in consumer.process_queues().items() if q.topic == topic]
        api, addr = consumer.instance.api, cluster.broker_addr
        await api.unlock_batch(addr, group, consumer.instance.client_id, [mq])
        assert await api.lock_batch(addr, group, "thief", [mq]) == [mq]
        service = consumer._service
        assert isinstance(service, OrderlyConsumeService)
        assert await service.lock([mq]) == set()  # the renewal learns the lock is lost
        await asyncio.sleep(1.0)  # the pull parked before that returns empty
        await send(namesrv, topic, ["while locked out"])
        for _ in range(10):  # not fetched: it could not be consumed in order anyway
            assert pq.count == 0
            await asyncio.sleep(0.1)
        await api.unlock_batch(addr, group, "thief", [mq])
        assert await service.lock([mq]) == {mq}
        await deliveries.wait_for_bodies({"while locked out"})
    assert deliveries.bodies() == ["first", "while locked out"]


async def test_a_broadcast_listener_over_consume_timeout_stops_holding_the_offset(
    namesrv: str, tmp_path: Path
) -> None:
    """Broadcasting has no retry topic: a call hung past consume_timeout has its message
    given up instead (Java's cleanExpiredMsg would send it back where no broadcast member
    reads), so the locally stored offset moves past it and past "fast" while the call still
    hangs, and a member started again does not get it a second time."""
    topic, group = await create_topic(namesrv, 1), unique("g")
    deliveries = Deliveries()
    release = asyncio.Event()

    name = unique("member")  # one instance name: a restart reads the same offset file

    def member() -> PushConsumer:
        consumer = PushConsumer(
            group,
            config=config_for(namesrv, name=name),
            message_model=MessageModel.BROADCASTING,
            offset_store_dir=tmp_path,
            consume_from=ConsumeFrom.FIRST_OFFSET,
            consume_timeout=0.5,
            broker_suspend_timeout=1.0,
            pull_timeout=5.0,
        )
        consumer.subscribe(topic)
        return consumer

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        deliveries.record("b", ctx.mq, msgs)
        if msgs[0].body == b"slow":
            await release.wait()

    first = member()
    first.register_concurrent(listener)
    await send(namesrv, topic, ["slow", "fast"])
    async with first:
        await deliveries.wait_for_bodies({"slow", "fast"}, timeout=20)
        async with asyncio.timeout(20):
            while any(pq.count for pq in first.process_queues().values()):
                await asyncio.sleep(0.05)
        assert not release.is_set()  # given up while the call still hangs
        release.set()
    again = member()
    again.register_concurrent(listener)
    async with again:
        await send(namesrv, topic, ["later"])
        await deliveries.wait_for_bodies({"later"}, timeout=20)
    assert sorted(deliveries.bodies()) == ["fast", "later", "slow"]


async def test_an_orderly_listener_over_consume_timeout_is_reported_and_keeps_its_order(
    namesrv: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An orderly batch is never sent back (the order would break), but a call hung past
    consume_timeout is warned about, naming its queue and offset, and counted; the messages
    then arrive once each, in order."""
    topic, group = await create_topic(namesrv, 1, order=True), unique("g")
    deliveries = Deliveries()
    consumer = PushConsumer(
        group,
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        consume_timeout=0.2,
        broker_suspend_timeout=1.0,
        pull_timeout=5.0,
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> None:
        if msgs[0].body == b"slow":
            await asyncio.sleep(1.0)
        deliveries.record("o", ctx.mq, msgs)

    consumer.register_orderly(listener)
    await send(namesrv, topic, ["slow", "next", "last"])
    async with consumer:
        await deliveries.wait_for_bodies({"slow", "next", "last"}, timeout=20)
        service = consumer._service
        assert isinstance(service, OrderlyConsumeService) and service.overrun_calls == 1
    assert deliveries.bodies() == ["slow", "next", "last"]
    warnings = [r.getMessage() for r in caplog.records if "orderly listener has run" in r.message]
    assert warnings and "offset 0" in warnings[0]


async def test_a_listener_over_consume_timeout_has_its_message_sent_back(
    namesrv_short_delays: str,
) -> None:
    """The first delivery of "slow" hangs past consume_timeout: the message is sent back (it
    comes again through the retry topic) and stops holding the queue's committed offset, which
    moves past it and past "fast" while the hung call is still running; its late success is
    ignored."""
    namesrv = namesrv_short_delays
    topic, group = await create_topic(namesrv, 1), unique("g")
    deliveries = Deliveries()
    release = asyncio.Event()
    consumer = PushConsumer(
        group,
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        consume_timeout=0.5,
        broker_suspend_timeout=1.0,
        pull_timeout=5.0,
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        deliveries.record("c", ctx.mq, msgs)
        if msgs[0].body == b"slow" and msgs[0].reconsume_times == 0:
            await release.wait()  # hangs until the test lets it go

    consumer.register_listener(listener)
    await send(namesrv, topic, ["slow", "fast"])
    async with consumer, Admin(config=config_for(namesrv)) as admin:
        await deliveries.wait(lambda: deliveries.bodies().count("slow") >= 2, timeout=20)
        async with asyncio.timeout(20):
            while True:
                rows = await admin.group_progress(group, topic, with_lag_time=False)
                if rows and rows[0].consumer_offset == 2:
                    break
                await asyncio.sleep(0.1)
        assert not release.is_set()  # all while the first call still hangs
        release.set()
        await asyncio.sleep(0.3)
    slow = [d for d in deliveries.all if d.body == "slow"]
    assert [d.reconsume_times for d in slow][:2] == [0, 1]
    assert deliveries.bodies().count("fast") == 1
