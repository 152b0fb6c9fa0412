"""RocketMQ 5.3's `rocketmq_timer_*` families (DefaultStoreMetricsConstant, filled by
DefaultStoreMetricsManager from TimerMessageStore), with its names, labels and units.

RocketMQ's timer store runs two stages: an enqueue service reads `rmq_sys_wheel_timer` into
the wheel some time after the append, and a dequeue service walks the wheel's slots up to
now.  Longboat has the second only: the append's arrival listener files a timer in the wheel
in-line (`delivery_timer.py`), so no timer ever waits to enter it.  Hence, per family:

* `rocketmq_timer_enqueue_total` / `_dequeue_total` (counters, `topic` = the real topic):
  timers filed in the wheel / delivered to their topic since the broker started (a recalled
  timer is never dequeued; timers rebuilt from disk at a restart are not enqueued again).
* `rocketmq_timer_enqueue_lag` (timer-queue messages not yet in the wheel) and
  `rocketmq_timer_enqueue_latency` (ms): 0, and that is the truth, not a stand-in.
* `rocketmq_timer_dequeue_lag`: timers in the wheel not yet delivered (RocketMQ counts the
  slots from its read pointer on: the same timers).
* `rocketmq_timer_dequeue_latency`: how far delivery is behind now, in whole seconds as
  RocketMQ records it (`getDequeueBehind()`, milliseconds / 1000, though its instrument
  declares milliseconds): now minus the earliest due time still pending, 0 when none is
  overdue (RocketMQ's read pointer idles at now rounded down to the precision: 0 s too).
* `rocketmq_timer_message_snapshot` (`timer_bound_s`): the timers due from now (rounded down
  to `timerPrecisionMs`) until each bound of RocketMQ's list, counted from the previous bound;
  timers due more than 24 h ahead, or overdue, are in no row, as in RocketMQ.

Every row carries the node labels and RocketMQ's store labels `storage_type="local"`,
`storage_medium="disk"`.  The scrape reads the due times (at most `timerMaxDelaySec * 1000`
/ the grain of them) nine times, once per bound and once for the earliest; nothing is kept
between scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import compress, pairwise, repeat
from operator import gt

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from longboat.broker.core.timers import Timers

# TimerMetrics.timerDist: the snapshot's bounds, in seconds (5 s, 1 min, 5 min, 15 min, 1 h,
# 4 h, 8 h, 24 h).
SNAPSHOT_BOUNDS_S = (5, 60, 300, 900, 3600, 14400, 28800, 86400)
_STORE_LABELS = {"storage_type": "local", "storage_medium": "disk"}


def timer_families(
    timers: Timers | None, names: list[str], values: list[str], now_ms: int, precision_ms: int
) -> Iterator[Metric]:
    """The families at `now_ms` (epoch ms); none on a slave (its master delivers)."""
    if timers is None:
        return
    names = [*names, *_STORE_LABELS]
    values = [*values, *_STORE_LABELS.values()]
    for name, doc, by_topic in (
        ("rocketmq_timer_enqueue", "Total number of timer enqueue", timers.enqueued),
        ("rocketmq_timer_dequeue", "Total number of timer dequeue", timers.dequeued),
    ):
        counter = CounterMetricFamily(name, doc, labels=[*names, "topic"])
        for topic, count in list(by_topic.items()):
            counter.add_metric([*values, topic], count)
        yield counter
    dues, counts = timers.due_counts()
    earliest = min(compress(dues, counts), default=None)
    behind_s = (now_ms - earliest) // 1000 if earliest is not None and earliest <= now_ms else 0
    for name, doc, figure in (
        ("rocketmq_timer_enqueue_lag", "Timer enqueue messages lag", 0),
        ("rocketmq_timer_enqueue_latency", "Timer enqueue latency", 0),
        ("rocketmq_timer_dequeue_lag", "Timer dequeue messages lag", timers.pending),
        ("rocketmq_timer_dequeue_latency", "Timer dequeue latency", behind_s),
    ):
        gauge = GaugeMetricFamily(name, doc, labels=names)
        gauge.add_metric(values, figure)
        yield gauge
    snapshot = GaugeMetricFamily(
        "rocketmq_timer_message_snapshot",
        "Timer message distribution snapshot, only count timing messages in 24h.",
        labels=[*names, "timer_bound_s"],
    )
    rows = due_distribution(dues, counts, now_ms, precision_ms)
    for bound, count in zip(SNAPSHOT_BOUNDS_S, rows, strict=True):
        snapshot.add_metric([*values, str(bound)], count)
    yield snapshot


def due_distribution(
    dues: list[int], counts: list[int], now_ms: int, precision_ms: int
) -> list[int]:
    """Timers per bound of SNAPSHOT_BOUNDS_S: row i counts those due in [previous bound,
    bound i) seconds after `now_ms` rounded down to `precision_ms` (RocketMQ's slots).
    Each cumulative count is one pass in C (`compress` over `map`) rather than a Python
    step per due time: a wheel may hold 259,200 due times."""
    start = now_ms // precision_ms * precision_ms
    limits = [start, *(start + bound * 1000 for bound in SNAPSHOT_BOUNDS_S)]
    before = [sum(compress(counts, map(gt, repeat(limit), dues))) for limit in limits]
    return [upper - lower for lower, upper in pairwise(before)]
