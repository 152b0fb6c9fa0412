"""Apache RocketMQ's remoting client 5.3.3 letting the broker assign (`DefaultMQPushConsumer`
with `setClientRebalance(false)`) against Longboat.  As on RocketMQ 5.3, the broker's answer to
QUERY_ASSIGNMENT decides pull or pop: once the group's mode is set to POP
(`Admin.set_message_request_mode`, RocketMQ's `mqadmin setConsumeMode`) the client pops
(POP_MESSAGE), builds each message's checkpoint from the answer and acks it (ACK_MESSAGE);
every message is consumed and the group's progress reaches the end of each queue, so nothing
is delivered again.  A group never set is assigned in PULL mode, and the client pulls.  With
two Longboat brokers serving the topic, the broker the client asks assigns the queues of both
(it looks the topic's route up at the name server, as RocketMQ 5.3's broker does), so the
client consumes what was sent to either, by pops or by pulls."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from client.client_e2e import config_for, unique
from client.push_support import create_topic, send
from conftest import Cluster, broker_config
from longboat.broker import BrokerController
from longboat.client.admin import Admin
from peers.rocketmq5 import run_pop_consume

QUEUES = 4


async def set_pop_mode(namesrv: str, topic: str, group: str) -> None:
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.set_message_request_mode(topic, group, "POP")


def java_consumes(
    cluster: Cluster, count: int, log_root: Path, *, pop: bool
) -> tuple[str, str, list[tuple[str, str]]]:
    """`count` messages sent to a new topic, consumed by the Java client in a new group (set to
    POP first when `pop`): the topic, the group, and (body, "pop" or "pull") per message."""
    ns = cluster.namesrv_addr
    topic = asyncio.run(create_topic(ns, QUEUES))
    bodies = [f"m-{i}" for i in range(count)]
    asyncio.run(send(ns, topic, bodies))
    group = unique("java-pop" if pop else "java-pull")
    if pop:
        asyncio.run(set_pop_mode(ns, topic, group))
    done = run_pop_consume(ns, group, topic, count, log_root=log_root)
    print(done.stdout[-4000:], done.stderr[-4000:], file=sys.stderr)
    assert done.returncode == 0, done.stdout[-2000:]
    lines = [line.split() for line in done.stdout.splitlines() if line.startswith("GOT ")]
    got = [(fields[1], fields[3]) for fields in lines]
    assert {body for body, _ in got} == set(bodies)
    return topic, group, got


def test_java_53_pop_consumer_consumes_and_acks_everything(
    java_peers: None, loopback_cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = loopback_cluster()
    topic, group, got = java_consumes(cluster, 20, tmp_path, pop=True)
    assert {how for _, how in got} == {"pop"}
    # Consumed by pops, not pulls: the broker's pop state holds the group's queues, none of
    # their messages still out.
    pops = [cluster.broker.pop.table.queue(group, topic, q) for q in range(QUEUES)]
    assert all(q is not None and not q.inflight for q in pops)
    offsets = cluster.broker.offsets
    ends = {q: cluster.broker.store.max_offset(topic, q) for q in range(QUEUES)}
    assert {q: offsets.query(group, topic, q) for q in range(QUEUES)} == ends


def test_java_53_broker_assigned_consumer_pulls_unless_the_group_is_set_to_pop(
    java_peers: None, loopback_cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = loopback_cluster()
    topic, group, got = java_consumes(cluster, 8, tmp_path, pop=False)
    assert {how for _, how in got} == {"pull"}
    assert all(cluster.broker.pop.table.queue(group, topic, q) is None for q in range(QUEUES))


@pytest.mark.parametrize("pop", [True, False], ids=["pop", "pull"])
def test_java_53_broker_assigned_consumer_reads_every_broker_of_the_topic(
    java_peers: None, loopback_cluster: Callable[..., Cluster], tmp_path: Path, pop: bool
) -> None:
    cluster = loopback_cluster()
    second = BrokerController(broker_config(tmp_path / "second", cluster.namesrv_addr))
    cluster.runner.run(second.start())
    try:
        topic, group, got = java_consumes(cluster, 16, tmp_path, pop=pop)
        assert {how for _, how in got} == {"pop" if pop else "pull"}
        # The producer spread the messages over both brokers' queues; popped, every one of
        # them is acked, so each broker has the group's progress at the end of its queues.
        for broker in (cluster.broker, second):
            ends = {q: broker.store.max_offset(topic, q) for q in range(QUEUES)}
            assert sum(ends.values()) > 0
            if pop:
                assert {q: broker.offsets.query(group, topic, q) for q in range(QUEUES)} == ends
    finally:
        cluster.runner.run(second.stop())
