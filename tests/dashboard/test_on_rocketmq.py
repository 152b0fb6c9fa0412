"""The dashboard against Apache RocketMQ's own name server and broker, 4.9.7 and 5.3.3 (the
session's `any_rocketmq`): it reads and changes the cluster only through the admin client, so
each page's data comes from a RocketMQ broker as it does from Longboat's.  The API behind every
page, then the pages that read the cluster, in Chromium."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import aiohttp
import pytest

from client.client_e2e import config_for, unique
from conftest import LoopThread
from dashboard.conftest import WAIT_MS, cell_texts, screenshot
from longboat.client import Message, MessageExt
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.producer import Producer
from longboat.client.push.consumer import PushConsumer
from longboat.dashboard.server import DashboardServer
from peers.rocketmq5 import AnyRocketMQ

pytestmark = pytest.mark.java


async def test_every_page_reads_a_rocketmq_cluster(any_rocketmq: AnyRocketMQ) -> None:
    rocketmq_cluster = any_rocketmq
    dashboard = DashboardServer(config_for(rocketmq_cluster.namesrv_addr), port=0)
    await dashboard.start()
    topic, group = unique("DashRmq"), unique("dash-rmq-readers")
    consumer: PushConsumer | None = None
    try:
        async with aiohttp.ClientSession(dashboard.url) as http:

            async def call(method: str, path: str, body: Any = None) -> Any:
                async with http.request(method, path, json=body) as answer:
                    data = await answer.json()
                    assert answer.status == 200, data
                    return data

            name = rocketmq_cluster.broker_name
            # A RocketMQ broker fails GET_BROKER_RUNTIME_INFO (NoSuchElementException from its
            # TPS sampler) until its first stats sample, and reports no rate until it sampled
            # 10 s; the page shows the error or "-", then the figures at a later refresh.
            # Refresh as the page does, for at most 30 s.
            for _ in range(60):
                cluster = await call("GET", "/api/cluster")
                [broker] = [b for b in cluster["brokers"] if b["broker"] == name]
                if "error" not in broker and broker["putTps"] is not None:
                    break
                await asyncio.sleep(0.5)
            assert "error" not in broker, broker
            version = "V" + rocketmq_cluster.version.replace(".", "_")
            assert broker["role"] == "master" and broker["version"] == version
            # 4.x says getTransferedTps, 5.x getTransferredTps: a rate either way.
            assert broker["putTps"] is not None and broker["getTps"] is not None, broker

            # Replication: the one broker, the master of its group, not in controller mode.
            replication = await call("GET", "/api/replication")
            [rmq_group] = [g for g in replication["groups"] if g["broker"] == name]
            [master] = rmq_group["members"]
            assert (master["role"], master["addr"]) == ("master", rocketmq_cluster.broker_addr)
            assert master["logEnd"] >= 0 and rmq_group["controller"] is None
            assert replication["controllers"] == []

            # The broker's own reply topic is the broker's, not a user's.
            kinds = {t["name"]: t["kind"] for t in (await call("GET", "/api/topics"))["topics"]}
            assert kinds[f"{rocketmq_cluster.cluster_name}_REPLY_TOPIC"] == "system"

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

            # A live group that consumed the message: listed with its member and no lag.
            consumer = await consumed(rocketmq_cluster.namesrv_addr, group, topic)
            for _ in range(30):
                rows = (await call("GET", "/api/groups"))["groups"]
                [row] = [r for r in rows if r["name"] == group] or [None]
                if row is not None and row["members"] == 1 and row["lag"] == 0:
                    break
                await asyncio.sleep(0.5)
            assert row is not None and (row["members"], row["lag"]) == (1, 0), row
            detail = await call("GET", f"/api/groups/{group}")
            assert topic in [s["topic"] for s in detail["subscriptions"]]
            assert [m["language"] for m in detail["members"]] == ["PYTHON"]
            assert sum(p["consumerOffset"] or 0 for p in detail["progress"]) == 1

            await call("DELETE", f"/api/topics/{topic}")
            names = [t["name"] for t in (await call("GET", "/api/topics"))["topics"]]
            assert topic not in names
    finally:
        if consumer is not None:
            await consumer.shutdown()
        await dashboard.stop()


async def consumed(namesrv: str, group: str, topic: str) -> PushConsumer:
    """A started member of `group` once it received `topic`'s one message."""
    got = asyncio.Event()
    consumer = PushConsumer(
        group, config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.subscribe(topic, "*")

    async def listener(msgs: list[MessageExt], ctx: object) -> None:
        got.set()

    consumer.register_listener(listener)
    await consumer.start()
    await asyncio.wait_for(got.wait(), 30)
    return consumer


@pytest.mark.browser
def test_the_pages_show_a_rocketmq_cluster(any_rocketmq: AnyRocketMQ, chromium_page: Any) -> None:
    """Cluster, Replication, Topics and Consumer groups, as a user sees them."""
    cluster, page = any_rocketmq, chromium_page
    topic, group = unique("DashRmqPage"), unique("dash-rmq-page")
    runner = LoopThread()
    dashboard = DashboardServer(config_for(cluster.namesrv_addr), port=0)
    consumers: list[PushConsumer] = []

    async def seed() -> None:
        async with Admin(config=config_for(cluster.namesrv_addr)) as admin:
            await admin.create_topic(topic, queue_nums=2)
        async with Producer(unique("dash-rmq-pg"), config=config_for(cluster.namesrv_addr)) as p:
            await p.send(Message(topic, b"seen from the page"))
        consumers.append(await consumed(cluster.namesrv_addr, group, topic))

    def shown(hash_path: str, row_of: str, done: Any) -> list[str]:
        """The cells of the row holding `row_of` once `done(cells)` (the page refreshes)."""
        page.goto("about:blank")
        page.goto(f"{dashboard.url}#{hash_path}")
        page.wait_for_selector("[data-loaded=true]", timeout=WAIT_MS)
        row = page.locator("tbody tr", has=page.get_by_text(row_of, exact=True))
        deadline = time.monotonic() + 30
        cells: list[str] = []
        while time.monotonic() < deadline:
            cells = cell_texts(row.first, "td") if row.count() else []
            if cells and done(cells):
                return cells
            time.sleep(0.5)
        raise AssertionError(f"{hash_path}: the row of {row_of} never showed it: {cells}")

    try:
        runner.run(dashboard.start())
        runner.run(seed(), timeout=60)
        version = "V" + cluster.version.replace(".", "_")
        # cluster, broker, id, role, address, version, user topics, put TPS, get TPS, ...
        # A fresh RocketMQ broker reports its rates once it sampled 10 s ("-" until then).
        cells = shown("/cluster", cluster.broker_addr, lambda c: c[5] == version and c[7] != "-")
        assert cells[:5] == [
            cluster.cluster_name,
            cluster.broker_name,
            "0",
            "master",
            cluster.broker_addr,
        ]
        # Rates to two decimals (RocketMQ 5 writes every digit of a double).
        assert all(re.fullmatch(r"\d+(\.\d{1,2})?", c) for c in cells[7:9]), cells
        if cluster.version.startswith("5"):
            screenshot(page, "rocketmq5-cluster")

        # id, role, address, commit-log end, behind: the one broker, its group's master.
        cells = shown("/replication", cluster.broker_addr, lambda c: c[3].isdigit())
        assert cells[:3] == ["0", "master", cluster.broker_addr] and cells[4] == "-"

        cells = shown("/topics", topic, lambda c: True)
        assert cells[1:3] == ["normal", cluster.broker_name]
        # The broker's own topics (its reply topic among them) stay behind the checkbox.
        assert f"{cluster.cluster_name}_REPLY_TOPIC" not in cell_texts(page, "td")

        # group, state, members, lag: a live member that consumed everything.
        cells = shown("/groups", group, lambda c: c[2:4] == ["1", "0"])
        assert cells[1] == "running"
    finally:
        for consumer in consumers:
            runner.run(consumer.shutdown(), timeout=60)
        runner.run(dashboard.stop())
        runner.close()
