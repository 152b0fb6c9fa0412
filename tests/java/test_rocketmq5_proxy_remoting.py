"""Longboat's client pointed at the remoting port of RocketMQ 5.3.3's proxy, as RocketMQ 5 users
point remoting clients at the proxy: in local mode (the session's `rocketmq5_cluster`: the proxy
hosts the broker in its JVM; see peers.rocketmq5), and in cluster mode (a proxy JVM of its own).

The proxy answers a route lookup on that port as a name server does, but in local mode the route
names the proxy's gRPC port as the broker's address (`LocalTopicRouteService` in RocketMQ's source
builds it from `grpcServerPort`, whatever port was asked): a remoting client following it reaches
a gRPC server that closes its connection, so a send through it fails. Requests only a name
server serves (cluster info, the topic list) are refused.

In cluster mode the route names the proxy itself, and the proxy forwards each request about a
queue to the broker named in its `bname` field (`n` on a send), refusing one without it
(VERSION_NOT_SUPPORTED "Request doesn't have field bname").  Longboat's client names the broker
group on those requests as RocketMQ's 5.x remoting client does, so a producer, a push consumer
and a lite-pull consumer work through that proxy.  docs/compatibility.md lists all three.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from client.client_e2e import config_for, unique
from client.push_support import Deliveries
from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.errors import ClientUsageError, SendTimeoutError
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.client.push import PushConsumer
from longboat.protocol.message import MessageExt
from peers.rocketmq5 import RocketMQ5Cluster, start_cluster_proxy

pytestmark = pytest.mark.java


async def new_topic(cluster: RocketMQ5Cluster) -> str:
    topic = unique("ViaProxy")
    async with Admin(config=config_for(cluster.namesrv_addr)) as admin:
        await admin.create_topic(topic, queue_nums=2)
    return topic


async def test_the_local_mode_proxy_routes_remoting_clients_to_its_grpc_port(
    rocketmq5_cluster: RocketMQ5Cluster,
) -> None:
    proxy = rocketmq5_cluster.proxy_remoting_addr
    topic = await new_topic(rocketmq5_cluster)

    async with Admin(config=config_for(proxy)) as admin:
        route = await admin.route(topic)
        assert [b.broker_addrs for b in route.broker_datas] == [
            {0: rocketmq5_cluster.grpc_endpoint}
        ]
        assert sum(q.write_queue_nums for q in route.queue_datas) == 2
        with pytest.raises(ClientUsageError, match="does not serve name-server request"):
            await admin.cluster_info()
        with pytest.raises(ClientUsageError, match="does not serve name-server request"):
            await admin.topics()

    async with Producer(unique("proxy_pg"), config=config_for(proxy), send_timeout=1.0) as p:
        with pytest.raises(SendTimeoutError, match="closed"):
            await p.send(Message(topic, b"through the proxy"))


async def test_longboat_sends_and_reads_through_a_cluster_mode_proxy(
    rocketmq5_cluster: RocketMQ5Cluster, tmp_path: Path
) -> None:
    topic = await new_topic(rocketmq5_cluster)
    process, proxy = start_cluster_proxy(tmp_path / "proxy", rocketmq5_cluster)
    try:
        async with Admin(config=config_for(proxy)) as admin:
            route = await admin.route(topic)
            assert [b.broker_addrs for b in route.broker_datas] == [{0: proxy}]
        bodies = {b"through the proxy %d" % i for i in range(6)}
        async with Producer(unique("proxy_pg"), config=config_for(proxy)) as producer:
            sent = [await producer.send(Message(topic, body)) for body in sorted(bodies)]
        assert {r.message_queue.queue_id for r in sent} == {0, 1}
        stored = Counter(r.message_queue for r in sent)

        deliveries = Deliveries()
        pushed = PushConsumer(
            unique("proxy_push"), config=config_for(proxy), consume_from=ConsumeFrom.FIRST_OFFSET
        )
        pushed.subscribe(topic)
        pushed.register_listener(lambda msgs, ctx: deliveries.record("push", ctx.mq, msgs))
        await pushed.start()
        try:
            await deliveries.wait_for_bodies({b.decode() for b in bodies})
        finally:
            await pushed.shutdown()

        consumer = LitePullConsumer(
            unique("proxy_cg"),
            config=config_for(proxy),
            consume_from=ConsumeFrom.FIRST_OFFSET,
            auto_commit=False,
        )
        await consumer.start()
        try:
            queues = await consumer.fetch_message_queues(topic)
            consumer.assign(queues)
            got: list[MessageExt] = []
            for _ in range(30):
                if len(got) >= len(bodies):
                    break
                got += await consumer.poll(timeout=1.0)
            assert {m.body for m in got} == bodies and len(got) == len(bodies)
            await consumer.commit()
            assert {mq: await consumer.committed(mq) for mq in queues} == stored
        finally:
            await consumer.shutdown()
    finally:
        process.kill()  # a cluster-mode proxy has no store and registers nowhere
