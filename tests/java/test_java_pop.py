"""Apache RocketMQ's remoting client 5.3.3 in pop mode (`DefaultMQPushConsumer` with
`setClientRebalance(false)`) against Longboat: the client asks the broker for its assignment
(QUERY_ASSIGNMENT, answered in POP mode), pops (POP_MESSAGE), builds each message's checkpoint
from the answer and acks it (ACK_MESSAGE); every message is consumed and the group's progress
reaches the end of each queue, so nothing is delivered again."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

from client.client_e2e import unique
from client.push_support import create_topic, send
from conftest import Cluster
from peers.rocketmq5 import run_pop_consume

QUEUES = 4


def test_java_53_pop_consumer_consumes_and_acks_everything(
    java_peers: None, loopback_cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = loopback_cluster()
    ns = cluster.namesrv_addr
    topic = asyncio.run(create_topic(ns, QUEUES))
    bodies = [f"pop-{i}" for i in range(20)]
    asyncio.run(send(ns, topic, bodies))
    group = unique("java-pop")
    done = run_pop_consume(ns, group, topic, 20, log_root=tmp_path)
    print(done.stdout[-4000:], done.stderr[-4000:], file=sys.stderr)
    assert done.returncode == 0, done.stdout[-2000:]
    got = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("GOT ")}
    assert got == set(bodies)
    # Consumed by pops, not pulls: the broker's pop state holds the group's queues, none of
    # their messages still out.
    pops = [cluster.broker.pop.table.queue(group, topic, q) for q in range(QUEUES)]
    assert all(q is not None and not q.inflight for q in pops)
    offsets = cluster.broker.offsets
    ends = {q: cluster.broker.store.max_offset(topic, q) for q in range(QUEUES)}
    assert {q: offsets.query(group, topic, q) for q in range(QUEUES)} == ends
