"""A mixed cluster: a Longboat broker and an Apache RocketMQ broker (4.9.7, and 5.3.3) in one
cluster, serving one topic, both registered with Longboat's name server and with Apache
RocketMQ's of the same version (the session's `rocketmq_cluster` or `rocketmq5_cluster` name
server).  Looked up through either name server, the topic's
route holds both brokers; RocketMQ's Java producer (4.9.8) and Longboat's producer each spread
their messages over both, and both a Longboat push consumer and a Java push consumer read every
message from both brokers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from client.client_e2e import config_for, unique
from client.push_support import Deliveries, positioned
from conftest import Cluster, LoopThread, broker_config
from longboat.broker.controller import BrokerController
from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, PushConsumer
from longboat.namesrv.server import NameServer
from longboat.protocol.message import MessageExt
from peers.rocketmq import RocketMQCluster, run_java_peer, start_java_peer, start_rocketmq
from peers.rocketmq5 import AnyRocketMQ, start_rocketmq5_broker

pytestmark = pytest.mark.java

CLUSTER = "MixedCluster"
PER_PRODUCER = 8


@dataclass
class Mixed:
    longboat: Cluster  # Longboat's name server and the Longboat broker
    rocketmq: RocketMQCluster  # the Apache RocketMQ broker (no name server of its own)
    their_namesrv: str

    def namesrv(self, whose: str) -> str:
        return self.longboat.namesrv_addr if whose == "longboat" else self.their_namesrv


@pytest.fixture(
    scope="module",
    params=["rocketmq_cluster", "rocketmq5_cluster"],
    ids=["rocketmq4.9.7", "rocketmq5.3.3"],
)
def mixed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Mixed]:
    theirs: AnyRocketMQ = request.getfixturevalue(request.param)
    start_broker = start_rocketmq if theirs.version == "4.9.7" else start_rocketmq5_broker
    runner = LoopThread()
    namesrv = NameServer("127.0.0.1", 0)
    runner.run(namesrv.start())
    both = f"{namesrv.addr};{theirs.namesrv_addr}"
    config = broker_config(
        tmp_path_factory.mktemp("mixed-longboat"),
        both,
        broker_name="longboat-mixed",
        broker_cluster_name=CLUSTER,
    )
    broker = BrokerController(config)
    runner.run(broker.start())
    longboat = Cluster(runner, namesrv, broker, config, config.store_path_root_dir)
    try:
        rocketmq = start_broker(
            tmp_path_factory.mktemp("mixed-rocketmq"),
            namesrv_addr=both,
            broker_options={"brokerName": "rocketmq-mixed", "brokerClusterName": CLUSTER},
        )
    except BaseException:
        longboat.stop()
        raise
    yield Mixed(longboat, rocketmq, theirs.namesrv_addr)
    rocketmq.stop()
    longboat.stop()


@pytest.mark.parametrize("whose", ["longboat", "rocketmq"])
async def test_one_topic_on_both_brokers_written_and_read_by_both_clients(
    mixed: Mixed, java_peers: None, whose: str
) -> None:
    ns = mixed.namesrv(whose)
    brokers = {"longboat-mixed", "rocketmq-mixed"}
    topic = unique(f"Mixed_{whose}")
    py_group, java_group = unique("mixed_py"), unique("mixed_java")
    async with Admin(config=config_for(ns)) as admin:
        assert set(await admin.create_topic(topic, queue_nums=4, cluster=CLUSTER)) == brokers
        route = await admin.route(topic)
        assert {q.broker_name for q in route.queue_datas} == brokers

    deliveries = Deliveries()
    consumer = PushConsumer(py_group, config=config_for(ns), consume_from=ConsumeFrom.FIRST_OFFSET)
    consumer.subscribe(topic)
    py_got: dict[str, str] = {}  # msg id -> the broker it came from

    def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        py_got.update((m.msg_id, ctx.mq.broker_name) for m in msgs)
        deliveries.record("py", ctx.mq, msgs)

    consumer.register_listener(listener)
    await consumer.start()
    total = 2 * PER_PRODUCER
    try:
        with start_java_peer(
            "PushConsume",
            namesrv=ns,
            topic=topic,
            group=java_group,
            expect=total,
            timeout_ms=90000,
        ) as java_consumer:
            await positioned(consumer)
            java_sent = await asyncio.to_thread(
                run_java_peer,
                "Produce",
                namesrv=ns,
                topic=topic,
                count=PER_PRODUCER,
                timeout_ms=60000,
                timeout=90,
            )
            async with Producer(unique("pg"), config=config_for(ns)) as producer:
                py_sent = [
                    await producer.send(Message(topic, b"python-%d" % i))
                    for i in range(PER_PRODUCER)
                ]
            java_events = await asyncio.to_thread(java_consumer.wait, 120)
        await deliveries.wait(lambda: len(set(deliveries.bodies())) >= total, timeout=60)
    finally:
        await consumer.shutdown()

    java_results = [e for e in java_sent if e["event"] == "sent"]
    assert [e["sendStatus"] for e in java_results] == ["SEND_OK"] * PER_PRODUCER
    assert {e["brokerName"] for e in java_results} == brokers
    assert {r.message_queue.broker_name for r in py_sent} == brokers

    sent_ids = {e["msgId"] for e in java_results} | {r.msg_id for r in py_sent}
    java_got = {e["msgId"]: e for e in java_events if e["event"] == "msg"}
    assert java_got.keys() == sent_ids
    assert {e["brokerName"] for e in java_got.values()} == brokers
    assert py_got.keys() == sent_ids
    assert set(py_got.values()) == brokers
