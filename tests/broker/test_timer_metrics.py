"""`rocketmq_timer_*` on the metrics endpoint follow the timers: enqueued as sent, pending
until due, dequeued once delivered or recalled."""

from __future__ import annotations

import time

from broker.test_metrics import free_port, scrape, value, wait_for
from broker.wire import Wire, sent
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.headers import RecallMessageRequestHeader
from longboat.protocol.properties import Prop


async def test_timer_figures_follow_sends_deliveries_and_recalls(loopback_cluster) -> None:
    port = free_port()
    cluster = loopback_cluster(metrics_port=port)
    node = {"cluster": cluster.config.broker_cluster_name, "node_type": "broker"}
    node["node_id"] = cluster.config.broker_name
    due = int(time.time() * 1000) + 1500
    wire = Wire(cluster.broker_addr)
    try:
        handles = []
        for i in range(3):
            props = {Prop.TIMER_DELIVER_MS: str(due), Prop.UNIQ_KEY: f"0A{i:030X}"}
            handles.append(sent(await wire.send("TimerMetrics", b"t", props=props)).recallHandle)
        header = RecallMessageRequestHeader(topic="TimerMetrics", recallHandle=handles[0] or "")
        assert (await wire.call(RequestCode.RECALL_MESSAGE, header)).code == ResponseCode.SUCCESS
    finally:
        await wire.close()
    samples = scrape(port)
    assert value(samples, "rocketmq_timer_enqueue_total", **node) == 3
    assert value(samples, "rocketmq_timer_message_snapshot", **node) == 2

    def delivered() -> bool:
        return value(scrape(port), "rocketmq_timer_dequeue_total", **node) == 2

    await wait_for(delivered, timeout=15)
    assert value(scrape(port), "rocketmq_timer_message_snapshot", **node) == 0
