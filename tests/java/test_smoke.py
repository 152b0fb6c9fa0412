"""Apache RocketMQ meets Longboat both ways: the proof that the Java fixtures work.

Its Java client (4.9.8) produces to a Longboat broker and its push consumer reads the messages
back intact; Longboat's producer sends to an Apache RocketMQ broker and Longboat's lite pull
consumer reads them back.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from client.client_e2e import config_for, read_topic, unique
from conftest import Cluster
from longboat.client import Message
from longboat.client.producer import Producer
from peers.rocketmq import RocketMQCluster, run_java_peer, start_java_peer

pytestmark = pytest.mark.java


def test_java_producer_and_push_consumer_against_longboat(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster().namesrv_addr
    topic, group = unique("JavaSmoke"), unique("java_smoke_group")
    sent = run_java_peer(
        "Produce",
        namesrv=ns,
        topic=topic,
        count=5,
        tags="TagA,TagB",
        keys="order",
        props="color=blue,size=9",
        timeout_ms=40000,
        timeout=60,
    )
    sent_ids = {e["msgId"]: e for e in sent if e["event"] == "sent"}
    assert [e["sendStatus"] for e in sent_ids.values()] == ["SEND_OK"] * 5

    with start_java_peer(
        "PushConsume", namesrv=ns, topic=topic, group=group, expect=5, timeout_ms=60000
    ) as consumer:
        events = consumer.wait(timeout=90)
    got = {e["msgId"]: e for e in events if e["event"] == "msg"}
    assert got.keys() == sent_ids.keys()
    for msg_id, msg in got.items():
        i = sent_ids[msg_id]["i"]
        assert msg["body"] == f"sync-{i}"
        assert msg["tags"] == ["TagA", "TagB"][i % 2]
        assert msg["keys"] == f"order-{i}"
        assert msg["properties"]["color"] == "blue"
        assert msg["properties"]["size"] == "9"
        assert (msg["queueId"], msg["queueOffset"]) == (
            sent_ids[msg_id]["queueId"],
            sent_ids[msg_id]["queueOffset"],
        )
    assert events[-1]["event"] == "done"


async def test_longboat_producer_and_lite_pull_against_rocketmq(
    rocketmq_cluster: RocketMQCluster,
) -> None:
    ns = rocketmq_cluster.namesrv_addr
    topic = unique("PySmoke")
    bodies = [f"from longboat {i}".encode() for i in range(10)]
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        results = [
            await producer.send(Message(topic, body, tags="T", keys=[f"k{i}"]))
            for i, body in enumerate(bodies)
        ]
    assert {r.message_queue.broker_name for r in results} == {rocketmq_cluster.broker_name}
    got = await read_topic(ns, topic, len(bodies))
    assert sorted(m.body for m in got) == sorted(bodies)
    assert {m.tags for m in got} == {"T"}
    assert sorted(m.keys or "" for m in got) == sorted(f"k{i}" for i in range(10))
