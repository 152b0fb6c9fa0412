"""Longboat's client pointed at the remoting port of RocketMQ 5.3.3's proxy, as RocketMQ 5 users
point remoting clients at the proxy, here in local mode (the session's `rocketmq5_cluster`: the
proxy hosts the broker in its JVM; see peers.rocketmq5).

The proxy answers a route lookup on that port as a name server does, but in local mode the route
names the proxy's gRPC port as the broker's address (`LocalTopicRouteService` in RocketMQ's source
builds it from `grpcServerPort`, whatever port was asked): a remoting client following it reaches
a gRPC server that closes its connection, so sends and pulls through it fail. Requests only a name
server serves (cluster info, the topic list) are refused. docs/compatibility.md lists both.
"""

from __future__ import annotations

import pytest

from client.client_e2e import config_for, unique
from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.errors import ClientUsageError, SendTimeoutError
from longboat.client.producer import Producer
from peers.rocketmq5 import RocketMQ5Cluster

pytestmark = pytest.mark.java


async def test_the_local_mode_proxy_routes_remoting_clients_to_its_grpc_port(
    rocketmq5_cluster: RocketMQ5Cluster,
) -> None:
    proxy = rocketmq5_cluster.proxy_remoting_addr
    topic = unique("ViaProxy")
    async with Admin(config=config_for(rocketmq5_cluster.namesrv_addr)) as admin:
        await admin.create_topic(topic, queue_nums=2)

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
