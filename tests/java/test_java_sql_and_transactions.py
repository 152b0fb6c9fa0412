"""Apache RocketMQ's Java client (4.9.8), unchanged, against Longboat's SQL92 filters and
transactional messages: `MessageSelector.bySql` on a DefaultMQPushConsumer (matching messages
only; a selector the broker refuses fails `start()`), and a TransactionMQProducer whose
commit, rollback and unknown outcomes — the last decided by the broker's check-back — end
as Longboat's consumer sees them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from client.client_e2e import config_for, read_topic, unique
from client.push_support import create_topic
from conftest import Cluster
from longboat.client import Message
from longboat.client.producer import Producer
from longboat.protocol import ResponseCode
from peers.rocketmq import run_java_peer, start_java_peer

pytestmark = pytest.mark.java


async def test_push_consumer_by_sql_gets_only_matching_messages(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster(enable_property_filter=True).namesrv_addr
    topic = await create_topic(ns, queues=2)
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for i in range(8):
            props = {"price": str(i * 10)} | ({"region": "eu"} if i % 2 else {})
            await producer.send(Message(topic, f"m{i}".encode(), properties=props))
    selector = "region = 'eu' AND price BETWEEN 20 AND 60"
    with start_java_peer(
        "PushConsume",
        namesrv=ns,
        topic=topic,
        group=unique("g"),
        sql=selector,
        expect=2,
        linger_ms=1500,
        timeout_ms=60000,
    ) as consumer:
        events = await asyncio.to_thread(consumer.wait, 90)
    got = sorted(e["body"] for e in events if e["event"] == "msg")
    assert got == ["m3", "m5"]


async def test_a_selector_the_broker_refuses_fails_the_java_consumers_start(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster(enable_property_filter=True).namesrv_addr
    topic = await create_topic(ns, queues=1)
    events = await asyncio.to_thread(
        run_java_peer,
        "PushConsume",
        timeout=60,
        check=False,
        namesrv=ns,
        topic=topic,
        group=unique("g"),
        sql="price > 'cheap'",
        timeout_ms=30000,
    )
    [error] = [e for e in events if e["event"] == "error"]
    assert error["code"] == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "cannot be compared" in error["message"]


async def test_transaction_producer_commit_rollback_and_check_back(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    # Halves older than 1 s are checked (the producer ends the others within milliseconds).
    ns = loopback_cluster(transaction_check_interval=500, transaction_time_out=1000).namesrv_addr
    topic = await create_topic(ns, queues=2)
    events = await asyncio.to_thread(
        run_java_peer,
        "TransactionProduce",
        timeout=90,
        namesrv=ns,
        topic=topic,
        count=3,
        decide="commit,rollback,unknown",
        check_answer="commit",
        linger_ms=4000,
        timeout_ms=60000,
    )
    sent = [e for e in events if e["event"] == "sent"]
    assert [e["localState"] for e in sent] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"]
    checked = [e for e in events if e["event"] == "checked"]
    assert {e["keys"] for e in checked} == {"tx-2"}
    assert {e["topic"] for e in checked} == {topic}
    got = await read_topic(ns, topic, 2)
    assert sorted(m.body for m in got) == [b"tx-0", b"tx-2"]
    assert {m.msg_id for m in got} == {sent[0]["msgId"], sent[2]["msgId"]}
