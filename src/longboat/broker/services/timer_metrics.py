"""RocketMQ 5.3's `rocketmq_timer_*` families (DefaultStoreMetricsConstant), from the timer
service's counts: enqueued and dequeued totals, the pending timers, and how late the
earliest due one is.  The enqueue lag and latency are 0: a timer enters the wheel as it is
appended.  `rocketmq_timer_message_snapshot` has one row, without RocketMQ's
`timer_bound_s` histogram label."""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from longboat.broker.core.timers import Timers


def timer_families(timers: Timers | None, names: list[str], values: list[str]) -> Iterator[Metric]:
    if timers is None:  # a slave: its master delivers
        return
    counters = (
        ("rocketmq_timer_enqueue", "Total number of timer enqueue", timers.enqueued),
        ("rocketmq_timer_dequeue", "Total number of timer dequeue", timers.dequeued),
    )
    for name, doc, count in counters:
        family = CounterMetricFamily(name, doc, labels=names)
        family.add_metric(values, count)
        yield family
    late_ms = 0
    earliest = timers.earliest_due_ms
    if earliest is not None:
        late_ms = max(0, int(time.time() * 1000) - earliest)
    gauges = (
        ("rocketmq_timer_message_snapshot", "Timer message distribution snapshot", timers.pending),
        ("rocketmq_timer_enqueue_lag", "Timer enqueue messages lag", 0),
        ("rocketmq_timer_enqueue_latency", "Timer enqueue latency", 0),
        ("rocketmq_timer_dequeue_latency", "Timer dequeue latency", late_ms),
    )
    for name, doc, value in gauges:
        gauge = GaugeMetricFamily(name, doc, labels=names)
        gauge.add_metric(values, value)
        yield gauge
