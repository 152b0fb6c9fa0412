"""The dashboard's API against Apache RocketMQ's own name server and broker (the session's
`rocketmq_cluster`): it reads and changes the cluster only through the admin client, so each
page's data comes from a RocketMQ broker as it does from Longboat's."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from client.client_e2e import config_for, unique
from longboat.dashboard.server import DashboardServer
from peers.rocketmq import RocketMQCluster

pytestmark = pytest.mark.java


async def test_every_page_reads_a_rocketmq_cluster(rocketmq_cluster: RocketMQCluster) -> None:
    dashboard = DashboardServer(config_for(rocketmq_cluster.namesrv_addr), port=0)
    await dashboard.start()
    topic = unique("DashRmq")
    try:
        async with aiohttp.ClientSession(dashboard.url) as http:

            async def call(method: str, path: str, body: Any = None) -> Any:
                async with http.request(method, path, json=body) as answer:
                    data = await answer.json()
                    assert answer.status == 200, data
                    return data

            name = rocketmq_cluster.broker_name
            # A RocketMQ broker fails GET_BROKER_RUNTIME_INFO (NoSuchElementException from its
            # TPS sampler) until its first stats sample; the page shows the error, then the
            # figures at its next refresh. Refresh as the page does, for at most 15 s.
            for _ in range(30):
                cluster = await call("GET", "/api/cluster")
                [broker] = [b for b in cluster["brokers"] if b["broker"] == name]
                if "error" not in broker:
                    break
                await asyncio.sleep(0.5)
            assert "error" not in broker, broker
            assert broker["role"] == "master" and broker["version"].startswith("V4_9")

            await call("POST", "/api/topics", {"name": topic, "queues": 2})
            sent = await call("POST", f"/api/topics/{topic}/send", {"body": "hi", "keys": "k1"})
            assert sent["status"] == "SEND_OK"
            view = await call("GET", f"/api/topics/{topic}")
            assert sum(q["max"] for q in view["queues"]) == 1

            found = await call("GET", f"/api/messages?id={sent['offsetMsgId']}")
            [message] = found["messages"]
            assert message["topic"] == topic and message["keys"] == ["k1"]
            by_key = await call("GET", f"/api/messages?topic={topic}&key=k1")
            assert [m["msgId"] for m in by_key["messages"]] == [sent["msgId"]]

            assert "groups" in await call("GET", "/api/groups")
            await call("DELETE", f"/api/topics/{topic}")
            names = [t["name"] for t in (await call("GET", "/api/topics"))["topics"]]
            assert topic not in names
    finally:
        await dashboard.stop()
