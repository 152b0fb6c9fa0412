"""Longboat's Python client against Apache RocketMQ's own broker and name server, each test once
against 4.9.7 and once against 5.3.3 (`any_rocketmq`: the session's `rocketmq_cluster` and
`rocketmq5_cluster`, broker.conf with `autoCreateTopicEnable=true` and every delay level 1 s,
see peers.rocketmq and peers.rocketmq5): the producer's send modes, the push consumer
(concurrent with retries to the DLQ, orderly, broadcasting), lite pull, and the admin API.

Two places where RocketMQ's broker answers differently from Longboat's, and the client copes:

* a pull asking for more than 32 messages gets at most 32 (`maxTransferCountOnMessageInMemory`);
  the consumers simply pull again;
* QUERY_CONSUMER_OFFSET on 4.x ignores `setZeroIfNotFound=false` and answers 0 for a group
  that never committed (RocketMQ #334; 5.3.3 answers "not found"); the client checks a 0
  against the group's consume stats, so a new group told to start at the last offset does not
  replay the topic's history.

And one where 5.3.3 refuses what 4.9.7 accepts: the offset of a group no member has announced
(SUBSCRIPTION_GROUP_NOT_EXIST); the admin's reset then registers the group first.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import pytest

from client.client_e2e import config_for, read_topic, unique
from client.push_support import (
    Deliveries,
    broker_driven_reset_restarts_a_live_group,
    failing_consumer,
    positioned,
)
from longboat.client import Message, NoRouteError
from longboat.client.admin import Admin, QueueOffset
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.message import SendResult
from longboat.client.producer import Producer
from longboat.client.push import (
    ConcurrentContext,
    MessageModel,
    OrderlyContext,
    OrderlyResult,
    PushConsumer,
)
from longboat.protocol.message import MessageExt
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.types import MessageQueue
from peers.rocketmq import RocketMQCluster
from peers.rocketmq5 import AnyRocketMQ

pytestmark = pytest.mark.java


async def new_topic(ns: str, queues: int) -> str:
    topic = unique("OnRmq")
    async with Admin(config=config_for(ns)) as admin:
        await admin.create_topic(topic, queue_nums=queues)
    return topic


async def test_every_send_mode_stores_the_message_as_sent(
    any_rocketmq: AnyRocketMQ,
) -> None:
    ns = any_rocketmq.namesrv_addr
    topic = unique("AutoCreated")  # not created first: the broker's autoCreateTopicEnable
    big = bytes(range(256)) * 40  # 10 KiB: sent compressed
    called: list[SendResult | None] = []
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        sync = await producer.send(
            Message(topic, b"sync", tags="TagS", keys=["k-sync"], properties={"color": "blue"})
        )
        task = producer.send_async(
            Message(topic, b"async", tags="TagA"), lambda r, e: called.append(r)
        )
        await producer.send_oneway(Message(topic, b"oneway", tags="TagO"))
        batch = await producer.send_batch([Message(topic, b"batch-%d" % i) for i in range(3)])
        ordered = [
            await producer.send(Message(topic, b"order-%d" % i), sharding_key="customer-7")
            for i in range(4)
        ]
        delayed = await producer.send(Message(topic, b"delayed", delay_level=1))
        compressed = await producer.send(Message(topic, big, keys=["k-big"]))
        assert (await task).ok and called == [await task]
    assert all(r.ok for r in [sync, batch, *ordered, delayed, compressed])
    assert sync.message_queue.broker_name == any_rocketmq.broker_name
    assert batch.offset_msg_id.count(",") == 2  # one offset id per message of the batch
    assert len({r.message_queue for r in ordered}) == 1
    assert [r.queue_offset for r in ordered] == sorted(r.queue_offset for r in ordered)

    got = {m.body: m for m in await read_topic(ns, topic, 12, timeout=30)}
    assert set(got) == {
        b"sync", b"async", b"oneway", b"delayed", big,
        *(b"batch-%d" % i for i in range(3)), *(b"order-%d" % i for i in range(4)),
    }  # fmt: skip
    assert (got[b"sync"].tags, got[b"sync"].keys) == ("TagS", "k-sync")
    assert got[b"sync"].properties["color"] == "blue"
    assert got[b"sync"].msg_id == sync.msg_id
    assert [got[b"batch-%d" % i].queue_offset for i in range(3)] == [
        batch.queue_offset + i for i in range(3)
    ]
    assert got[big].sys_flag & MessageSysFlag.COMPRESSED
    # Delivered through SCHEDULE_TOPIC_XXXX after the level's second.
    delayed_msg = got[b"delayed"]
    assert delayed_msg.store_timestamp - delayed_msg.born_timestamp >= 900


async def test_a_delay_is_an_exact_timer_on_5_and_a_level_on_4(
    any_rocketmq: AnyRocketMQ,
) -> None:
    """The producer asks each broker's settings (GET_BROKER_CONFIG): 5.3.3 reports
    `timerWheelEnable=true`, so `delay=` travels as TIMER_DELAY_MS; 4.9.7 has no such key
    (and would ignore the property), so it travels as the delay level rounded up, through
    SCHEDULE_TOPIC_XXXX (every level is 1 s on these brokers)."""
    ns = any_rocketmq.namesrv_addr
    topic = await new_topic(ns, 1)
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        await producer.send(Message(topic, b"in 2 s", delay=timedelta(seconds=2)))
    [got] = await read_topic(ns, topic, 1, timeout=30)
    if isinstance(any_rocketmq, RocketMQCluster):
        assert "TIMER_DELAY_MS" not in got.properties
        assert got.properties["REAL_TOPIC"] == topic  # it went through the schedule topic
        assert got.store_timestamp - got.born_timestamp >= 900
    else:
        assert got.properties["TIMER_DELAY_MS"] == "2000"
        assert got.store_timestamp - got.born_timestamp >= 2000


async def test_push_consumer_retries_through_retry_topic_into_the_dlq(
    any_rocketmq: AnyRocketMQ,
) -> None:
    ns = any_rocketmq.namesrv_addr
    topic, group = await new_topic(ns, 2), unique("retry_g")
    consumer, deliveries = failing_consumer(ns, group, topic, max_reconsume_times=2)
    await consumer.start()
    try:
        await positioned(consumer)
        async with Producer(unique("pg"), config=config_for(ns)) as producer:
            for body in ("fine", "flaky", "poison"):
                await producer.send(Message(topic, body.encode(), keys=[body]))
        # poison: the first delivery and two reconsumes, then the DLQ.
        await deliveries.wait(
            lambda: deliveries.bodies().count("poison") == 3 and "flaky" in deliveries.bodies()[1:],
            timeout=60,
        )
        async with Admin(config=config_for(ns)) as admin:
            deadline = time.monotonic() + 30
            dead: list[MessageExt] = []
            while not dead:
                assert time.monotonic() < deadline, "poison never reached the DLQ"
                await asyncio.sleep(0.2)
                with contextlib.suppress(NoRouteError):  # the DLQ's route comes a moment later
                    dead = await admin.messages_by_key(f"%DLQ%{group}", "poison")
    finally:
        await consumer.shutdown()
    by_body = defaultdict(list)
    for d in deliveries.all:
        by_body[d.body].append(d.reconsume_times)
    assert by_body["fine"] == [0]
    assert by_body["flaky"] == [0, 1]
    assert by_body["poison"] == [0, 1, 2]
    assert [m.body for m in dead] == [b"poison"]
    assert dead[0].topic == f"%DLQ%{group}"
    assert dead[0].properties["RETRY_TOPIC"] == topic


async def test_orderly_consumer_keeps_each_keys_order(any_rocketmq: AnyRocketMQ) -> None:
    ns = any_rocketmq.namesrv_addr
    topic, group = await new_topic(ns, 4), unique("orderly_g")
    keys = [f"key{i}" for i in range(6)]
    bodies = [f"{k}:{step}" for step in range(8) for k in keys]
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for body in bodies:
            await producer.send(Message(topic, body.encode()), sharding_key=body.split(":")[0])
    deliveries = Deliveries()
    suspended = {"key2:3": 1}
    consumer = PushConsumer(
        group,
        config=config_for(ns),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        suspend_current_queue_time=0.05,
    )
    consumer.subscribe(topic)

    def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> OrderlyResult:
        deliveries.record("o", ctx.mq, msgs)
        body = msgs[0].body.decode()
        if suspended.get(body, 0) > 0:
            suspended[body] -= 1
            return OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return OrderlyResult.SUCCESS

    consumer.register_listener(listener, orderly=True)
    await consumer.start()
    try:
        await deliveries.wait_for_bodies(set(bodies), timeout=60)
    finally:
        await consumer.shutdown()
    for k in keys:
        seen = [b for b in deliveries.bodies() if b.startswith(k + ":")]
        # Each key in order; the suspended message comes again before anything after it.
        expected = [f"{k}:{s}" for s in range(8)]
        if k == "key2":
            expected.insert(4, "key2:3")
        assert seen == expected, k


async def test_broadcasting_delivers_everything_to_every_member(
    any_rocketmq: AnyRocketMQ, tmp_path: Path
) -> None:
    ns = any_rocketmq.namesrv_addr
    topic, group = await new_topic(ns, 2), unique("broadcast_g")
    deliveries = Deliveries()
    members = []
    for name in ("b1", "b2"):
        member = PushConsumer(
            group,
            config=config_for(ns, name=unique(name)),
            message_model=MessageModel.BROADCASTING,
            offset_store_dir=tmp_path,
        )
        member.subscribe(topic)

        def listener(msgs: list[MessageExt], ctx: ConcurrentContext, name: str = name) -> None:
            deliveries.record(name, ctx.mq, msgs)

        member.register_concurrent(listener)
        members.append(member)
        await member.start()
    bodies = {f"all-{i}" for i in range(10)}
    try:
        await positioned(*members)
        async with Producer(unique("pg"), config=config_for(ns)) as producer:
            for body in sorted(bodies):
                await producer.send(Message(topic, body.encode()))
        await deliveries.wait(
            lambda: (
                bodies <= set(deliveries.bodies("b1")) and bodies <= set(deliveries.bodies("b2"))
            )
        )
    finally:
        for member in members:
            await member.shutdown()


async def test_lite_pull_reads_past_the_brokers_32_message_cap_and_commits(
    any_rocketmq: AnyRocketMQ,
) -> None:
    ns = any_rocketmq.namesrv_addr
    topic, group = await new_topic(ns, 1), unique("lite_g")
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        await producer.send_batch([Message(topic, b"m%03d" % i) for i in range(50)])
        await producer.send_batch([Message(topic, b"m%03d" % i) for i in range(50, 100)])

    consumer = LitePullConsumer(group, config=config_for(ns), auto_commit=False, pull_batch_size=64)
    await consumer.start()
    try:
        (mq,) = await consumer.fetch_message_queues(topic)
        # RocketMQ's broker hands out 32 at most, whatever the pull asks for.
        addr = await consumer.instance.find_master_addr(mq.broker_name, topic)
        raw = await consumer.instance.api.peek(addr, mq, 0, count=64)
        assert len(raw) == 32
        consumer.assign([mq])
        await consumer.seek(mq, 10)
        got: list[MessageExt] = []
        deadline = time.monotonic() + 30
        while len(got) < 90 and time.monotonic() < deadline:
            got += await consumer.poll(timeout=1)
        assert [m.body for m in got] == [b"m%03d" % i for i in range(10, 100)]
        await consumer.commit()
        assert await consumer.committed(mq) == 100
    finally:
        await consumer.shutdown()


async def admin_queues(ns: str, topic: str) -> list[MessageQueue]:
    async with Admin(config=config_for(ns)) as admin:
        return [status.mq for status in await admin.topic_status(topic)]


async def test_a_new_group_at_last_offset_skips_history(
    any_rocketmq: AnyRocketMQ,
) -> None:
    ns = any_rocketmq.namesrv_addr
    topic, group = await new_topic(ns, 2), unique("fresh_g")
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for i in range(6):
            await producer.send(Message(topic, b"history-%d" % i))
        async with Admin(config=config_for(ns)) as admin:
            mq = (await admin.topic_status(topic))[0].mq
            addr = await admin.instance.find_master_addr(mq.broker_name, topic)
            # The 4.x answer for a group that never committed: 0, not "not found".
            raw = await admin.instance.api.query_consumer_offset(
                addr, group, mq, set_zero_if_not_found=False
            )
            assert raw == (0 if any_rocketmq.version.startswith("4.") else None)
        deliveries = Deliveries()
        consumer = PushConsumer(group, config=config_for(ns), consume_from=ConsumeFrom.LAST_OFFSET)
        consumer.subscribe(topic)
        consumer.register_listener(lambda msgs, ctx: deliveries.record("c", ctx.mq, msgs))
        await consumer.start()
        try:
            await positioned(consumer)
            # One new message on each queue: once both arrived, each queue was read from
            # where the group started, and history would have come before them.
            new = {f"new-{q.broker_name}-{q.queue_id}": q for q in await admin_queues(ns, topic)}
            for body, queue in new.items():
                await producer.send(Message(topic, body.encode()), queue=queue)
            await deliveries.wait_for_bodies(set(new))
        finally:
            await consumer.shutdown()
    assert sorted(deliveries.bodies()) == sorted(new)


async def test_admin_on_rocketmq_progress_lag_reset_and_lookups(
    any_rocketmq: AnyRocketMQ,
) -> None:
    ns = any_rocketmq.namesrv_addr
    topic, group = await new_topic(ns, 2), unique("admin_g")
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        early = [
            await producer.send(Message(topic, b"e%d" % i, keys=[f"early-{i}"])) for i in range(4)
        ]
        await asyncio.sleep(0.05)
        between_ms = int(time.time() * 1000)
        await asyncio.sleep(0.05)
        late = [
            await producer.send(Message(topic, b"l%d" % i, keys=[f"late-{i}"])) for i in range(4)
        ]
    ends: defaultdict[int, int] = defaultdict(int)
    for r in early + late:
        ends[r.message_queue.queue_id] += 1

    async with Admin(config=config_for(ns)) as admin:
        route = await admin.route(topic)
        assert [q.write_queue_nums for q in route.queue_datas] == [2]
        # The group commits 1 message per queue: lag is the rest.
        await admin.reset_offsets(group, topic, QueueOffset(1))
        progress = {p.mq.queue_id: p for p in await admin.group_progress(group, topic)}
        assert {q: (p.broker_offset, p.consumer_offset, p.lag) for q, p in progress.items()} == {
            q: (n, 1, n - 1) for q, n in ends.items()
        }
        assert all(p.lag_time is not None and p.lag_time >= 0 for p in progress.values())

        moved = await admin.reset_offsets(group, topic, between_ms)
        first_late: dict[int, int] = {}
        for r in late:
            first_late.setdefault(r.message_queue.queue_id, r.queue_offset)
        assert {mq.queue_id: o for mq, o in moved.items()} == {
            q: first_late.get(q, ends[q]) for q in ends
        }
        committed = {p.mq.queue_id: p.consumer_offset for p in await admin.group_progress(group)}
        assert committed == {q: first_late.get(q, ends[q]) for q in ends}

        probe = late[2]
        by_offset_id = await admin.message_by_id(probe.offset_msg_id)
        by_unique_key = await admin.message_by_id(probe.msg_id, topic)
        assert by_offset_id.body == by_unique_key.body == b"l2"
        assert (by_offset_id.queue_id, by_offset_id.queue_offset) == (
            probe.message_queue.queue_id,
            probe.queue_offset,
        )
        (keyed,) = await admin.messages_by_key(topic, "early-1")
        assert keyed.body == b"e1"


async def test_a_broker_driven_reset_restarts_a_live_group(
    rocketmq_cluster: RocketMQCluster,
) -> None:
    # 4.9.7 only: 5.3.3 also keeps the reset in a table and answers the member's next pull of
    # the queue with OFFSET_MOVED back to it, even when the member already re-read the queue
    # from there after the notice; the queue is then read twice (docs/compatibility.md).
    reset_to = await broker_driven_reset_restarts_a_live_group(
        rocketmq_cluster.namesrv_addr, rocketmq_cluster.broker_addr
    )
    # RocketMQ's broker picks the message stored closest to the time, on either side of it.
    assert reset_to in (2, 3)
