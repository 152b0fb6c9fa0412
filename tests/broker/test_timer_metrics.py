"""`rocketmq_timer_*` on the metrics endpoint follow the timers: enqueued as sent, pending
until due, dequeued once delivered (never when recalled), with RocketMQ 5.3's labels; and the
figures computed from the wheel's due times mean what RocketMQ's mean."""

from __future__ import annotations

import time
from collections import Counter

from prometheus_client.metrics_core import Metric

from broker.test_metrics import free_port, scrape, value, wait_for
from broker.wire import Wire, sent
from longboat.broker.services.timer_metrics import timer_families
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.headers import RecallMessageRequestHeader
from longboat.protocol.properties import Prop

STORE = {"storage_type": "local", "storage_medium": "disk"}


async def test_timer_figures_follow_sends_deliveries_and_recalls(loopback_cluster) -> None:
    port = free_port()
    cluster = loopback_cluster(metrics_port=port)
    node = {"cluster": cluster.config.broker_cluster_name, "node_type": "broker"}
    node["node_id"] = cluster.config.broker_name
    node.update(STORE)
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
    assert value(samples, "rocketmq_timer_enqueue_total", topic="TimerMetrics", **node) == 3
    assert value(samples, "rocketmq_timer_dequeue_lag", **node) == 2
    # Filed in the wheel by the append itself: nothing waits to be enqueued.
    assert ("rocketmq_timer_enqueue_lag", tuple(sorted(node.items()))) in samples
    assert value(samples, "rocketmq_timer_enqueue_lag", **node) == 0
    assert value(samples, "rocketmq_timer_message_snapshot", timer_bound_s="5", **node) == 2

    def delivered() -> bool:
        samples = scrape(port)
        return value(samples, "rocketmq_timer_dequeue_total", topic="TimerMetrics", **node) == 2

    await wait_for(delivered, timeout=15)
    samples = scrape(port)
    assert value(samples, "rocketmq_timer_dequeue_lag", **node) == 0
    assert value(samples, "rocketmq_timer_message_snapshot", timer_bound_s="5", **node) == 0
    # Delivered: how far delivery is behind now, in whole seconds (RocketMQ's unit), is
    # neither negative nor anywhere near the time the delivery was waited for.
    assert ("rocketmq_timer_dequeue_latency", tuple(sorted(node.items()))) in samples
    assert 0 <= value(samples, "rocketmq_timer_dequeue_latency", **node) <= 15


class _Wheel:
    """The timer service as the metrics read it: counts and due times, no broker."""

    def __init__(self, due_counts: list[tuple[int, int]]) -> None:
        self.enqueued: Counter[str] = Counter({"A": 5})
        self.dequeued: Counter[str] = Counter({"A": 1})
        self._due_counts = due_counts

    @property
    def pending(self) -> int:
        return sum(count for _, count in self._due_counts)

    def due_counts(self) -> tuple[list[int], list[int]]:
        return [due for due, _ in self._due_counts], [count for _, count in self._due_counts]

    def recall(self, topic: str, raw_handle: str) -> str:
        raise AssertionError("the metrics never recall")


def _rows(families: list[Metric], name: str) -> dict[str, float]:
    """`name`'s samples by their last label's value (the family's own label)."""
    family = next(f for f in families if f.name == name)
    return {list(s.labels.values())[-1]: s.value for s in family.samples}


def test_latency_is_the_earliest_overdue_in_whole_seconds_and_the_snapshot_buckets() -> None:
    now = 1_700_000_000_500  # half a grain past a second
    wheel = _Wheel([
        (now - 7_600, 2),  # overdue by 7.6 s: the latency, in whole seconds
        (now - 1_000, 1),
        (now + 2_500, 3),  # due within 5 s
        (now + 4_500, 1),  # 5 s from now rounded down to the second: the 60 s row
        (now + 90_000, 4),  # 1.5 min: the 300 s row
        (now + 2 * 86_400_000, 1),  # beyond 24 h: in no row, as RocketMQ's 24 h snapshot
    ])  # fmt: skip
    families = list(timer_families(wheel, ["node_id"], ["b"], now, 1000))
    assert _rows(families, "rocketmq_timer_dequeue_latency") == {"disk": 7}
    assert _rows(families, "rocketmq_timer_dequeue_lag") == {"disk": 12}
    assert _rows(families, "rocketmq_timer_message_snapshot") == {
        "5": 3, "60": 1, "300": 4, "900": 0, "3600": 0, "14400": 0, "28800": 0, "86400": 0,
    }  # fmt: skip
    assert _rows(families, "rocketmq_timer_enqueue") == {"A": 5}


def test_nothing_overdue_is_no_latency() -> None:
    now = 1_700_000_000_000
    families = list(timer_families(_Wheel([(now + 1000, 1)]), [], [], now, 1000))
    assert _rows(families, "rocketmq_timer_dequeue_latency") == {"disk": 0}
    families = list(timer_families(_Wheel([]), [], [], now, 1000))
    assert _rows(families, "rocketmq_timer_dequeue_latency") == {"disk": 0}
