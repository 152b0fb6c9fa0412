"""Apache RocketMQ's gRPC Java client 5.x (`rocketmq-client-java`, the peer program
`Grpc5.java`) against the gRPC endpoint: Producer, SimpleConsumer (ack, redelivery with the
attempt counted) and PushConsumer (retry after FAILURE), and messages crossing between it and
the official Python client."""

from __future__ import annotations

import pytest
from rocketmq import FilterExpression

from peers.rocketmq import run_java5_peer

from .conftest import Grpc5
from .test_python_simple import message, receive_all

pytestmark = [pytest.mark.java, pytest.mark.usefixtures("java_peers")]
TIMEOUT_S = 120


def java5(grpc5: Grpc5, **options: object) -> list[dict]:
    return run_java5_peer(
        timeout=TIMEOUT_S, endpoint=grpc5.endpoint, timeout_ms=(TIMEOUT_S - 10) * 1000, **options
    )


def events(all_events: list[dict], kind: str) -> list[dict]:
    return [e for e in all_events if e["event"] == kind]


def test_java_producer_to_python_simple_consumer(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    sent = events(java5(grpc5, mode="produce", topic=topic, count=5, tag="J"), "sent")
    assert len(sent) == 5
    with grpc5.simple_consumer(group, {topic: FilterExpression("J")}) as consumer:
        got = receive_all(consumer, 5)
        assert {m.message_id for m in got} == {e["msgId"] for e in sent}
        for m in got:
            i = m.body.decode().removeprefix("java5-")
            assert m.keys == {f"java5-key-{i}"}
            assert m.properties == {"peer": "java5"}
            consumer.ack(m)


def test_java_simple_consumer_acks_and_sees_redelivery(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with grpc5.producer(topic) as producer:
        ids = {
            producer.send(message(topic, f"py-{i}".encode(), tag="P")).message_id for i in range(3)
        }
    # The first delivery is not acked: it comes back (attempt 2) after its 2 s.
    out = java5(grpc5, mode="simple", topic=topic, group=group, expect=3, skip_ack_first=1)
    msgs = events(out, "msg")
    assert {m["msgId"] for m in msgs if m["outcome"] == "acked"} == ids
    skipped = msgs[0]
    assert skipped["outcome"] == "not acked" and skipped["attempt"] == 1
    again = [m for m in msgs if m["msgId"] == skipped["msgId"] and m["outcome"] == "acked"]
    assert [m["attempt"] for m in again] == [2]
    assert all(m["tag"] == "P" for m in msgs)


def test_java_push_consumer_retries_a_failure(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with grpc5.producer(topic) as producer:
        for i in range(4):
            producer.send(message(topic, f"push-{i}".encode(), group=None))
    out = java5(grpc5, mode="push", topic=topic, group=group, expect=4, fail_first=1)
    msgs = events(out, "msg")
    assert events(out, "done")
    failed = [m for m in msgs if m["outcome"] == "FAILURE"]
    assert len(failed) == 1
    retried = [m for m in msgs if m["msgId"] == failed[0]["msgId"] and m["outcome"] == "SUCCESS"]
    assert [m["attempt"] for m in retried] == [2]
    assert sorted({m["body"] for m in msgs}) == [f"push-{i}" for i in range(4)]


def test_java_fifo_messages_keep_group_order(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group(orderly=True)
    java5(grpc5, mode="produce", topic=topic, count=10, message_group="order-1")
    with grpc5.simple_consumer(group, {topic: FilterExpression()}) as consumer:
        bodies: list[bytes] = []
        while len(bodies) < 10:
            batch = receive_all(consumer, 1)
            assert batch
            for m in batch:
                assert m.message_group == "order-1"
                bodies.append(m.body)
                consumer.ack(m)
    assert bodies == [f"java5-{i}".encode() for i in range(10)]
