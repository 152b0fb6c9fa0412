"""The transaction producer against a real broker: commit delivers once, rollback never, a
producer that dies before deciding has its half decided by the check-back on another member of
its group, and a broker restart between the half and the decision loses and doubles nothing."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

from conftest import Cluster
from longboat.client import Message, MessageExt
from longboat.client.transaction import (
    LocalTransactionState,
    TransactionProducer,
)

from .client_e2e import config_for, read_topic, unique

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOWN = LocalTransactionState.UNKNOWN
FAST_CHECKS = {"transaction_check_interval": 200, "transaction_time_out": 0}


def never_asked(msg: MessageExt) -> LocalTransactionState:
    raise AssertionError(f"unexpected check-back for {msg.msg_id}")


async def test_commit_delivers_and_rollback_does_not(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    namesrv = loopback_cluster().namesrv_addr
    topic = unique("Tx")
    seen: list[tuple[bytes, object]] = []

    async def local(msg: Message, arg: object) -> LocalTransactionState:
        seen.append((msg.body, arg))
        return COMMIT if arg == "ok" else ROLLBACK

    producer = TransactionProducer(
        unique("txg"), config=config_for(namesrv), check_listener=never_asked
    )
    async with producer:
        kept = await producer.send_in_transaction(Message(topic, b"kept"), local, "ok")
        dropped = await producer.send_in_transaction(Message(topic, b"dropped"), local, "no")
        marker = await producer.send(Message(topic, b"marker"))
    assert kept.local_state is COMMIT and dropped.local_state is ROLLBACK
    assert seen == [(b"kept", "ok"), (b"dropped", "no")]
    got = await read_topic(namesrv, topic, 2)
    assert sorted(m.body for m in got) == [b"kept", b"marker"]
    assert {m.msg_id for m in got} == {kept.send.msg_id, marker.msg_id}


async def test_a_producer_that_dies_before_deciding_is_decided_by_the_check_back(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    namesrv = loopback_cluster(**FAST_CHECKS).namesrv_addr
    topic, group = unique("Tx"), unique("txg")
    ledger = {"order-1": COMMIT, "order-2": ROLLBACK}  # the durable truth the check reads

    def unknown(msg: Message, arg: object) -> LocalTransactionState:
        return UNKNOWN  # the process dies before it can tell

    first = TransactionProducer(group, config=config_for(namesrv), check_listener=never_asked)
    async with first:
        for key in ledger:
            await first.send_in_transaction(Message(topic, key.encode(), keys=key), unknown)
    asked: list[str] = []

    def check(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg.keys or "")
        assert msg.topic == topic
        return ledger[msg.keys or ""]

    # The group's next process: the broker checks back with it once it is known there (it
    # heartbeats to the brokers of the topics it uses, as Java's producer does).
    second = TransactionProducer(group, config=config_for(namesrv), check_listener=check)
    async with second:
        await second.send(Message(topic, b"resumed"))
        got = await read_topic(namesrv, topic, 2)
        async with asyncio.timeout(20):
            while len(asked) < 2:
                await asyncio.sleep(0.05)
    assert sorted(m.body for m in got) == [b"order-1", b"resumed"]
    assert sorted(asked) == ["order-1", "order-2"]


async def test_a_broker_restart_between_half_and_decision_loses_and_doubles_nothing(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(**FAST_CHECKS)
    namesrv = cluster.namesrv_addr
    topic = unique("Tx")

    async def restart_then_commit(msg: Message, arg: object) -> LocalTransactionState:
        await asyncio.to_thread(cluster.restart_broker)
        return COMMIT

    # Heartbeats often enough that the restarted broker knows the producer for its check-backs.
    config = dataclasses.replace(config_for(namesrv), heartbeat_broker_interval=0.2)
    producer = TransactionProducer(unique("txg"), config=config, check_listener=lambda msg: COMMIT)
    async with producer:
        before = await producer.send_in_transaction(
            Message(topic, b"decided before"), lambda m, a: COMMIT
        )
        during = await producer.send_in_transaction(Message(topic, b"across"), restart_then_commit)
        got = await read_topic(namesrv, topic, 2)
        # A half left undecided now is committed by a check-back: once it is readable, a
        # check round ran after the restart, and it committed nothing a second time.
        await producer.send_in_transaction(
            Message(topic, b"checked"), lambda m, a: LocalTransactionState.UNKNOWN
        )
        again = await read_topic(namesrv, topic, 3)
    assert sorted(m.body for m in got) == [b"across", b"decided before"]
    assert sorted(m.body for m in again) == [b"across", b"checked", b"decided before"]
    topic_config = cluster.broker.topics.get(topic)
    assert topic_config is not None
    queues = range(topic_config.write_queue_nums)
    stored = [cluster.broker.store.max_offset(topic, q) for q in queues]
    assert sum(stored) == 3  # each once
    assert {m.msg_id for m in got} == {before.send.msg_id, during.send.msg_id}
