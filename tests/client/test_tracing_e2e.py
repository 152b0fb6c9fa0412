"""Longboat's client writes RocketMQ's message trace records (`enable_trace=True`, a custom
trace topic) to a real broker: a Pub per send, a SubBefore and a SubAfter per delivery
attempt, a transactional send's half and outcome (EndTransaction), read back by message id
and arranged as `longboat message trace` shows them; no record when the broker's trace
switch is off."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from conftest import Cluster
from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeFrom, ConsumeResult, PushConsumer
from longboat.client.tracing.timeline import message_timeline, trace_entries
from longboat.client.transaction import LocalTransactionState, TransactionProducer
from longboat.protocol.message import MessageExt
from longboat.protocol.trace import MessageType, TraceRecord, TraceType

from .client_e2e import config_for, unique

REGION = "PyRegion"


async def traced_round_trip(
    namesrv: str, trace_topic: str, bodies: list[bytes]
) -> tuple[list[str], str, str]:
    """Send `bodies` with traces on, consume them with a listener failing each first
    delivery (redelivered after delay level 1), stop both; the ids, producer and group."""
    topic, group, producer_group = unique("Traced"), unique("tg"), unique("tpg")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=2)
    producer = Producer(
        producer_group, config=config_for(namesrv), enable_trace=True, trace_topic=trace_topic
    )
    await producer.start()
    try:
        ids = [
            (await producer.send(Message(topic, body, tags="T", keys=[f"k{i}"]))).msg_id
            for i, body in enumerate(bodies)
        ]
    finally:
        await producer.shutdown()
    consumed: set[str] = set()
    done = asyncio.Event()

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
        if msgs[0].reconsume_times == 0:
            ctx.delay_level_when_next_consume = 1
            return ConsumeResult.RECONSUME_LATER
        consumed.update(m.msg_id for m in msgs)
        if consumed >= set(ids):
            done.set()
        return ConsumeResult.SUCCESS

    consumer = PushConsumer(
        group,
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        enable_trace=True,
        trace_topic=trace_topic,
    )
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    await consumer.start()
    try:
        await asyncio.wait_for(done.wait(), 60)
    finally:
        await consumer.shutdown()
    return ids, producer_group, group


async def test_python_traces_read_back_as_a_timeline(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    trace_topic = unique("PyTrace")
    cluster = loopback_cluster(
        trace_topic_enable=True, msg_trace_topic_name=trace_topic, region_id=REGION
    )
    ns = cluster.namesrv_addr
    ids, producer_group, group = await traced_round_trip(ns, trace_topic, [b"a", b"b"])
    async with Admin(config=config_for(ns)) as admin:
        for i, msg_id in enumerate(ids):
            records: list[TraceRecord] = [
                e.record for e in await trace_entries(admin, msg_id, trace_topic)
            ]
            kinds = sorted(r.type.value for r in records)
            assert kinds == ["Pub", "SubAfter", "SubAfter", "SubBefore", "SubBefore"]
            (pub,) = [r for r in records if r.type is TraceType.PUB]
            assert (pub.group, pub.region_id, pub.tags, pub.keys) == (
                producer_group,
                REGION,
                "T",
                f"k{i}",
            )
            assert pub.store_host == cluster.broker_addr and pub.success
            timeline = await message_timeline(admin, msg_id, trace_topic=trace_topic)
            assert timeline.store_timestamp is not None
            attempts = timeline.attempts[group]
            assert [(a.retry_times, a.success) for a in attempts] == [(0, False), (1, True)]
            assert all(a.client_host.startswith("127.0.0.1:") for a in attempts)


async def test_no_records_when_the_broker_turns_traces_off(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    ns = loopback_cluster(trace_on=False).namesrv_addr
    producer = Producer(unique("tpg"), config=config_for(ns), enable_trace=True)
    await producer.start()
    try:
        result = await producer.send(Message(unique("Off"), b"x"))
        # The Pub record would be queued before the send returns; the answer said no.
        assert not result.trace_on
        dispatcher = producer._tracing.dispatcher
        assert dispatcher is not None
        await dispatcher.flush()
        assert dispatcher.written == 0 and dispatcher.dropped == 0
    finally:
        await producer.shutdown()


async def test_a_transactional_send_records_its_half_and_its_outcome(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    trace_topic = unique("TxTrace")
    cluster = loopback_cluster(trace_topic_enable=True, msg_trace_topic_name=trace_topic)
    ns = cluster.namesrv_addr
    topic, group = unique("TxTraced"), unique("txpg")

    def commit(msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    producer = TransactionProducer(
        group,
        config=config_for(ns),
        check_listener=lambda m: LocalTransactionState.COMMIT_MESSAGE,
        enable_trace=True,
        trace_topic=trace_topic,
    )
    async with producer:
        sent = await producer.send_in_transaction(Message(topic, b"tx", keys="tx-1"), commit)
    async with Admin(config=config_for(ns)) as admin:
        records = [e.record for e in await trace_entries(admin, sent.send.msg_id, trace_topic)]
    pub, end = sorted(records, key=lambda r: r.type.value, reverse=True)
    assert (pub.type, pub.msg_type, pub.group) == (TraceType.PUB, MessageType.TRANS_HALF, group)
    assert (end.type, end.transaction_state, end.from_transaction_check) == (
        TraceType.END_TRANSACTION,
        "COMMIT_MESSAGE",
        False,
    )
    assert (end.keys, end.store_host, end.region_id) == (
        "tx-1",
        cluster.broker_addr,
        "DefaultRegion",
    )
