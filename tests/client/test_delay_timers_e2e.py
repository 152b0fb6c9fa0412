"""`Message(delay=...)` as each broker takes it, against real brokers on loopback: an exact
timer where the broker serves timer messages (GET_BROKER_CONFIG's `timerWheelEnable=true`),
the delay level rounded up where it does not (`timerWheelEnable=false`; RocketMQ 4.9.7 is in
tests/java/test_longboat_client_on_rocketmq.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest

from conftest import Cluster
from longboat.client import BrokerError, ClientUsageError, Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.tracing.timeline import trace_entries
from longboat.client.transaction import LocalTransactionState, TransactionProducer
from longboat.protocol import ResponseCode
from longboat.protocol.trace import MessageType, TraceType

from .client_e2e import config_for, read_topic, unique
from .test_producer_e2e import make_topic

ClusterFactory = Callable[..., Cluster]


async def test_a_delay_to_a_broker_with_timers_is_an_exact_timer(
    loopback_cluster: ClusterFactory,
) -> None:
    namesrv = loopback_cluster().namesrv_addr
    topic = await make_topic(namesrv, queues=1)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        soon = await producer.send(Message(topic, b"in 3 s", delay=timedelta(seconds=3)))
        # Farther than any level (2 h): a timer takes it; recalled, so it never arrives.
        far = await producer.send(Message(topic, b"in 3 h", delay=timedelta(hours=3)))
        assert soon.recall_handle and far.recall_handle  # the broker stored timers
        await producer.recall(topic, far.recall_handle)
    [got] = await read_topic(namesrv, topic, 1, timeout=30.0)
    assert got.body == b"in 3 s"
    assert got.properties["TIMER_DELAY_MS"] == "3000"
    assert "DELAY" not in got.properties
    assert got.store_timestamp - got.born_timestamp >= 3000


async def test_a_delay_to_a_broker_without_timers_rounds_up_to_a_level(
    loopback_cluster: ClusterFactory,
) -> None:
    namesrv = loopback_cluster(timer_wheel_enable=False).namesrv_addr
    topic = await make_topic(namesrv, queues=1)
    async with Producer(unique("pg"), config=config_for(namesrv), retry_times=0) as producer:
        sent = await producer.send(Message(topic, b"in 3 s", delay=timedelta(seconds=3)))
        assert not sent.recall_handle  # a delay level: nothing to recall
        with pytest.raises(ClientUsageError, match="no delay level is at least"):
            await producer.send(Message(topic, b"in 3 h", delay=timedelta(hours=3)))
        # A timer asked for by name is refused as RocketMQ refuses it.
        with pytest.raises(BrokerError, match="timerWheelEnable is false") as refused:
            await producer.send(Message(topic, b"at", deliver_at=int(time.time() * 1000) + 60_000))
        assert refused.value.code == ResponseCode.SYSTEM_ERROR
    [got] = await read_topic(namesrv, topic, 1, timeout=30.0)
    assert got.body == b"in 3 s"
    assert "TIMER_DELAY_MS" not in got.properties
    # Level 2 (5 s on the default ladder), the shortest at least 3 s: never early.
    assert got.store_timestamp - got.born_timestamp >= 5000


async def test_a_transactional_message_cannot_be_delayed() -> None:
    later = Message("T", b"x", delay=timedelta(seconds=3))
    commit = LocalTransactionState.COMMIT_MESSAGE
    producer = TransactionProducer(unique("tg"), check_listener=lambda m: commit)
    with pytest.raises(ClientUsageError, match="transactional message cannot be delayed"):
        await producer.send_in_transaction(later, lambda m, a: commit)


async def test_a_broker_restarted_without_timers_gets_levels(
    loopback_cluster: ClusterFactory,
) -> None:
    """The cached answer is asked again once a delayed send to that broker failed."""
    cluster = loopback_cluster()
    namesrv = cluster.namesrv_addr
    topic = await make_topic(namesrv, queues=1)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        timer = await producer.send(Message(topic, b"timer", delay=timedelta(seconds=1)))
        assert timer.recall_handle
        [got] = await read_topic(namesrv, topic, 1, timeout=30.0)
        assert got.properties["TIMER_DELAY_MS"] == "1000"
        cluster.config = cluster.config.updated(timer_wheel_enable=False)
        cluster.restart_broker()
        level = Message(topic, b"level", delay=timedelta(seconds=1))
        assert not (await producer.send(level, timeout=30.0)).recall_handle
    got_both = {m.body: m for m in await read_topic(namesrv, topic, 2, timeout=30.0)}
    assert "TIMER_DELAY_MS" not in got_both[b"level"].properties


async def test_a_delayed_send_is_traced_as_a_delay_message(
    loopback_cluster: ClusterFactory,
) -> None:
    trace_topic = unique("DelayTrace")
    ns = loopback_cluster(trace_topic_enable=True, msg_trace_topic_name=trace_topic).namesrv_addr
    topic = await make_topic(ns, queues=1)
    config = config_for(ns)
    async with Producer(
        unique("pg"), config=config, enable_trace=True, trace_topic=trace_topic
    ) as p:
        sent = await p.send(Message(topic, b"x", delay=timedelta(seconds=1)))
    async with Admin(config=config_for(ns)) as admin:
        entries = await trace_entries(admin, sent.msg_id, trace_topic)
    [pub] = [e.record for e in entries if e.record.type is TraceType.PUB]
    assert pub.msg_type is MessageType.DELAY
