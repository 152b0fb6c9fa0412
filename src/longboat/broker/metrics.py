"""The broker's Prometheus endpoint (`metricsPort`, off when 0).

Two kinds of figures, kept apart so the hot path stays cheap:

* Events counted as they happen — messages and bytes in and out per topic, retries and DLQ
  arrivals per group, wake-up and flush latencies.  The counters are label children bound once
  per topic or group (a dict lookup and one `inc` per request, never a `labels()` call on the
  hot path); sends are counted by a router middleware on their codes, pulls by a listener
  of the pull answers' deliveries (`controller.deliveries`, told the count the read already
  knows), and wake-ups by a hold service observer, so the send and pull modules know
  nothing of metrics, and the module may be installed before or after them.
* State read at scrape time by a custom collector — held pulls, wake-ups and timeouts, dispatch
  lag, store size, and per-queue consumer lag and lag time for every group.  Nothing is
  maintained between scrapes, so a broker with thousands of queues pays only when scraped.

The HTTP server is prometheus-client's own (a daemon thread) on the broker's listen host; the
collector runs on that thread and reads only what the store and offset table make safe to read
from another thread (lock-free queue reads, `ConsumerOffsetTable.snapshot()`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.topic_names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from longboat.remoting import Connection, Handler, HandlerResult

if TYPE_CHECKING:
    from longboat.broker.feature_host import CoreHost
    from longboat.broker.hold import HeldPull

log = logging.getLogger(__name__)

# Wake-ups are sub-millisecond when healthy; flushes span page-cache syncs to slow disks.
WAKE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0)
FLUSH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
_SEND_CODES = (
    RequestCode.SEND_MESSAGE,
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
)


class _PerLabel:
    """Label children of one counter, bound on first use and reused after."""

    __slots__ = ("_children", "_counter")

    def __init__(self, counter: Counter) -> None:
        self._counter = counter
        self._children: dict[str, Any] = {}

    def inc(self, label: str, amount: float = 1) -> None:
        child = self._children.get(label)
        if child is None:
            child = self._children[label] = self._counter.labels(label)
        child.inc(amount)


class BrokerMetrics:
    """The broker's metric families in their own registry (one per broker: tests run several
    brokers in one process)."""

    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry

        def per(name: str, doc: str, label: str) -> _PerLabel:
            return _PerLabel(Counter(name, doc, [label], registry=reg))

        self.messages_in = per("longboat_messages_in", "Messages stored by sends", "topic")
        self.bytes_in = per(
            "longboat_bytes_in",
            "Bytes of send request bodies stored (a batch counts its wire encoding)",
            "topic",
        )
        self.messages_out = per("longboat_messages_out", "Messages delivered by pulls", "topic")
        self.bytes_out = per("longboat_bytes_out", "Bytes of pull response bodies", "topic")
        self.retries = per(
            "longboat_retry_messages",
            "Messages stored to a group's retry topic (redeliveries due)",
            "group",
        )
        self.dead = per(
            "longboat_dlq_messages", "Messages stored to a group's dead-letter topic", "group"
        )
        self.wake_latency = Histogram(
            "longboat_pull_wakeup_latency_seconds",
            "From a message's arrival to the answer of a held pull it woke",
            buckets=WAKE_BUCKETS,
            registry=reg,
        )
        self.flush_latency = Histogram(
            "longboat_flush_latency_seconds",
            "Duration of one commit-log sync (fdatasync)",
            buckets=FLUSH_BUCKETS,
            registry=reg,
        )
        reg.register(StateCollector(controller))
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port the endpoint listens on (0 before start)."""
        return self._server.server_port if self._server is not None else 0

    # ------------------------------------------------------------------ hot-path hooks

    def count_sends(
        self, conn: Connection, cmd: RemotingCommand, handler: Handler
    ) -> HandlerResult:
        """Router middleware on the send codes: count what was stored."""
        result = handler(conn, cmd)
        if isinstance(result, RemotingCommand):
            self._count_send(cmd, result)
            return result
        if inspect.isawaitable(result):
            return self._after(cmd, result)
        return result

    async def _after(
        self, cmd: RemotingCommand, pending: Awaitable[RemotingCommand | None]
    ) -> RemotingCommand | None:
        response = await pending
        if response is not None:
            self._count_send(cmd, response)
        return response

    def _count_send(self, cmd: RemotingCommand, response: RemotingCommand) -> None:
        if response.code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT):
            return
        ext = cmd.ext_fields
        topic = ext.get("b") or ext.get("topic") or ""
        msg_id = response.ext_fields.get("msgId") or ""
        self.messages_in.inc(topic, msg_id.count(",") + 1)
        self.bytes_in.inc(topic, len(cmd.body))

    def delivered(self, topic: str, messages: int, size: int) -> None:
        """Pull deliveries listener: what every pull answer carried, immediate or held."""
        self.messages_out.inc(topic, messages)
        self.bytes_out.inc(topic, size)

    def held_pull_answered(
        self, held: HeldPull, response: RemotingCommand, wake_latency_s: float | None
    ) -> None:
        """Hold service observer: how fast a pull an arrival woke was answered."""
        if wake_latency_s is not None:
            self.wake_latency.observe(wake_latency_s)

    def on_arrival(
        self, topic: str, queue_id: int, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> None:
        """Retry and DLQ arrivals, by group (one call per single message on those topics:
        batches may not go there)."""
        if topic[:1] != "%":
            return
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            self.retries.inc(topic[len(RETRY_GROUP_TOPIC_PREFIX) :])
        elif topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
            self.dead.inc(topic[len(DLQ_GROUP_TOPIC_PREFIX) :])

    # ------------------------------------------------------------------ the endpoint

    def start(self) -> None:
        cfg = self.controller.config
        try:
            self._server, self._thread = start_http_server(
                cfg.metrics_port, addr=cfg.bind_host, registry=self.registry
            )
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"metrics endpoint: cannot listen on {cfg.bind_host}:{cfg.metrics_port} "
                f"(metricsPort): {exc.strerror}",
            ) from exc
        log.info("metrics at http://%s:%d/metrics", cfg.bind_host, self.port)

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(5)


class StateCollector(Collector):
    """Figures read from the broker's state when scraped."""

    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller

    def describe(self) -> list[Metric]:
        return []  # built at scrape time; names are checked then

    def collect(self) -> Iterator[Metric]:
        ctl = self.controller
        store = ctl.store
        hold = ctl.hold
        yield GaugeMetricFamily(
            "longboat_held_pulls", "Pull requests parked by long polling", hold.held_count
        )
        yield CounterMetricFamily(
            "longboat_pull_wakeups", "Held pulls answered by an arrival", hold.woken
        )
        yield CounterMetricFamily(
            "longboat_pull_hold_timeouts", "Held pulls answered by their timer", hold.expired
        )
        yield GaugeMetricFamily(
            "longboat_dispatch_lag_bytes",
            "Commit-log bytes not yet in consume queues (dispatch is in-line: 0 at rest)",
            max(0, store.max_physical_offset - store.dispatched_physical_offset),
        )
        yield GaugeMetricFamily(
            "longboat_unflushed_bytes",
            "Commit-log bytes written but not yet synced to disk",
            max(0, store.max_physical_offset - store.flushed_physical_offset),
        )
        yield GaugeMetricFamily(
            "longboat_commitlog_max_offset_bytes",
            "End of the commit log (bytes ever appended)",
            store.max_physical_offset,
        )
        yield GaugeMetricFamily(
            "longboat_store_size_bytes", "Bytes the store's files occupy on disk", store.disk_bytes
        )
        yield from consumer_lag(ctl, time.time())


def consumer_lag(ctl: CoreHost, now_s: float) -> Iterator[Metric]:
    """Per group, topic and queue: messages behind the queue's end, and how long the oldest
    unconsumed one has waited (0 when caught up; no sample when its store time is unreadable,
    e.g. retention deleted it)."""
    labels = ["group", "topic", "queue"]
    lag = GaugeMetricFamily(
        "longboat_consumer_lag_messages",
        "Messages between a group's offset and the end",
        labels=labels,
    )
    lag_time = GaugeMetricFamily(
        "longboat_consumer_lag_seconds",
        "Age of the oldest message a group has not consumed",
        labels=labels,
    )
    store = ctl.store
    now_ms = now_s * 1000
    for group, topics in sorted(ctl.offsets.snapshot().items()):
        for topic, queues in sorted(topics.items()):
            for queue_id, offset in sorted(queues.items()):
                behind = max(0, store.max_offset(topic, queue_id) - offset)
                values = [group, topic, str(queue_id)]
                lag.add_metric(values, behind)
                age: float | None = 0.0
                if behind:
                    try:
                        oldest = max(offset, store.min_offset(topic, queue_id))
                        stored = store.store_time_at(topic, queue_id, oldest)
                    except ValueError:  # its segment was deleted under the read (retention)
                        stored = None
                    age = None if stored is None else max(0.0, (now_ms - stored) / 1000)
                if age is not None:
                    lag_time.add_metric(values, age)
    yield lag
    yield lag_time


def install(controller: CoreHost) -> BrokerMetrics:
    """Count sends and pulls (router middleware, deliveries listener, hold observer), hear
    retry/DLQ arrivals and flushes, and serve the endpoint while the broker runs; the
    metrics, for the host."""
    metrics = BrokerMetrics(controller)
    controller.router.use(metrics.count_sends, codes=_SEND_CODES)
    controller.deliveries.add(metrics.delivered)
    controller.hold.add_observer(metrics)
    controller.store.observe_flushes(metrics.flush_latency.observe)
    controller.add_arrival_listener(metrics.on_arrival)
    controller.add_start_hook(metrics.start)
    controller.add_stop_hook(lambda: asyncio.to_thread(metrics.stop))
    return metrics
