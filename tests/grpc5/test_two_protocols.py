"""One topic, two protocols: a message sent by the official Python 5.x client over gRPC is
read by Longboat's remoting consumer with its tag, keys, properties and id, and a message sent
over remoting is received, acked and counted by the 5.x SimpleConsumer."""

from __future__ import annotations

import time

from rocketmq import FilterExpression

from longboat.client import ClientConfig, Message, MessageExt
from longboat.client.consume_from import ConsumeFrom
from longboat.client.sync import LitePullConsumer, Producer

from .conftest import Grpc5
from .test_python_simple import message, receive_all


def remoting_config(grpc5: Grpc5) -> ClientConfig:
    return ClientConfig([grpc5.cluster.namesrv_addr], client_ip="127.0.0.1")


def test_sent_over_grpc_read_over_remoting(grpc5: Grpc5) -> None:
    topic = grpc5.topic()
    sent = {}
    with grpc5.producer(topic) as producer:
        for i in range(5):
            msg = message(topic, f"from-grpc-{i}".encode(), tag="TagG")
            msg.keys = f"gk-{i}"
            msg.add_property("origin", "grpc")
            sent[producer.send(msg).message_id] = i
        fifo_id = producer.send(message(topic, b"ordered", group="og")).message_id
    got: list[MessageExt] = []
    with LitePullConsumer(
        "remoting-reader",
        config=remoting_config(grpc5),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        auto_commit=False,
    ) as consumer:
        consumer.subscribe(topic)
        deadline = time.monotonic() + 20
        while len(got) < 6 and time.monotonic() < deadline:
            got += consumer.poll(1.0)
    by_id = {m.msg_id: m for m in got}
    assert set(by_id) == {*sent, fifo_id}
    for msg_id, i in sent.items():
        m = by_id[msg_id]
        assert m.body == f"from-grpc-{i}".encode()
        assert m.tags == "TagG"
        assert m.key_list == [f"gk-{i}"]
        assert m.properties["origin"] == "grpc"
    assert by_id[fifo_id].properties["__SHARDINGKEY"] == "og"


def test_sent_over_remoting_received_over_grpc(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with Producer("remoting-writer", config=remoting_config(grpc5)) as producer:
        ids = {
            producer.send(
                Message(topic, f"from-remoting-{i}".encode(), tags="TagR", keys=[f"rk-{i}"])
            ).msg_id: i
            for i in range(5)
        }
    with grpc5.simple_consumer(group, {topic: FilterExpression("TagR")}) as consumer:
        got = receive_all(consumer, 5)
        assert {m.message_id: m.body for m in got} == {
            msg_id: f"from-remoting-{i}".encode() for msg_id, i in ids.items()
        }
        for m in got:
            assert m.tag == "TagR"
            assert m.keys == {f"rk-{ids[m.message_id]}"}
            assert not m.corrupted
            consumer.ack(m)
    # The group's progress reads as a remoting group's: every queue consumed to its end.
    offsets = grpc5.cluster.broker.offsets.queue_offsets(group, topic)
    store = grpc5.cluster.broker.store
    assert offsets and all(off == store.max_offset(topic, q) for q, off in offsets.items())
