"""The broker's Prometheus endpoint (`metricsPort`, off when 0).

Two kinds of figures, kept apart so the hot path stays cheap:

* Events counted as they happen — messages and bytes in and out per topic, retries and DLQ
  arrivals per group, wake-up and flush latencies.  The counters are label children bound once
  per topic or group (a dict lookup and one `inc` per request, never a `labels()` call on the
  hot path); sends are counted by a router middleware on their codes, pulls by a listener
  of the pull answers' deliveries (`controller.deliveries`, told the count the read already
  knows), and wake-ups by a hold service observer, so the send and pull modules know
  nothing of metrics, and the module may be installed before or after them.
* State read at scrape time by a custom collector — held pulls and parked pops, their wake-ups
  and timeouts (by `kind`), dispatch lag, store size, and per-queue consumer lag and lag time
  for every group.  Nothing is maintained between scrapes, so a broker with thousands of
  queues pays only when scraped.

Every figure RocketMQ 5 also exports is served a second time under its name and labels
(`BrokerMetricsConstant`: `rocketmq_messages_in_total`, `rocketmq_consumer_lag_messages`, ...,
with `cluster`, `node_type`, `node_id`, `topic`, `consumer_group`, `is_retry`, `is_system`),
so dashboards built for RocketMQ 5 work unchanged.  Those families are derived at scrape time
from the ones above (`RocketMQ5Collector`): the hot path counts once.  What Longboat cannot
say as RocketMQ 5 does is stated where the family is built.

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

from longboat.broker.core.timers import timer_precision
from longboat.broker.services.timer_metrics import timer_families
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.topic_names import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    is_system_topic,
)
from longboat.remoting import Connection, Handler, HandlerResult

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost
    from longboat.broker.state.hold import HeldPull, HoldService

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

    def totals(self) -> Iterator[tuple[str, float]]:
        """(label value, count) of every child, as a scrape reads them."""
        for family in self._counter.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    yield next(iter(sample.labels.values())), sample.value


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
        reg.register(RocketMQ5Collector(controller, self))
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
        yield from hold_families(ctl.hold)
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


def queue_lags(ctl: CoreHost, now_s: float) -> Iterator[tuple[str, str, int, int, float | None]]:
    """(group, topic, queue id, messages behind the queue's end, seconds the oldest
    unconsumed one has waited: 0 when caught up, None when its store time is unreadable, e.g.
    retention deleted it), for every committed offset."""
    store = ctl.store
    now_ms = now_s * 1000
    for group, topics in sorted(ctl.offsets.snapshot().items()):
        for topic, queues in sorted(topics.items()):
            for queue_id, offset in sorted(queues.items()):
                behind = max(0, store.max_offset(topic, queue_id) - offset)
                age: float | None = 0.0
                if behind:
                    try:
                        oldest = max(offset, store.min_offset(topic, queue_id))
                        stored = store.store_time_at(topic, queue_id, oldest)
                    except ValueError:  # its segment was deleted under the read (retention)
                        stored = None
                    age = None if stored is None else max(0.0, (now_ms - stored) / 1000)
                yield group, topic, queue_id, behind, age


def consumer_lag(ctl: CoreHost, now_s: float) -> Iterator[Metric]:
    """Per group, topic and queue: messages behind the queue's end, and how long the oldest
    unconsumed one has waited (no sample when unreadable)."""
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
    for group, topic, queue_id, behind, age in queue_lags(ctl, now_s):
        values = [group, topic, str(queue_id)]
        lag.add_metric(values, behind)
        if age is not None:
            lag_time.add_metric(values, age)
    yield lag
    yield lag_time


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _normal(topic: str) -> str:
    """RocketMQ 5's message_type of a topic's incoming messages: Longboat counts them all
    as normal ones."""
    return "normal"


def _is_retry(topic: str) -> str:
    return _flag(topic.startswith(RETRY_GROUP_TOPIC_PREFIX))


class RocketMQ5Collector(Collector):
    """RocketMQ 5's families, from Longboat's (see the module docstring).

    Differences, by family: `rocketmq_messages_in_total` / `rocketmq_throughput_in_total`
    carry `message_type="normal"` for every send (the broker counts sends by topic only);
    the out families have no `consumer_group` (pull answers are counted per topic);
    `rocketmq_send_to_dlq_messages_total` has `consumer_group` but no `topic`;
    `rocketmq_consumer_inflight_messages` is 0 and `rocketmq_consumer_ready_messages` equals
    the lag, as the broker keeps a group's committed offset but not how far it has pulled."""

    def __init__(self, controller: CoreHost, metrics: BrokerMetrics) -> None:
        self.controller = controller
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # built at scrape time

    def collect(self) -> Iterator[Metric]:
        cfg = self.controller.config
        node = {"cluster": cfg.broker_cluster_name, "node_type": "broker"}
        node["node_id"] = cfg.broker_name
        names, values = list(node), list(node.values())
        m = self.metrics
        for name, doc, counts, label, label_of in (
            ("rocketmq_messages_in", "Total number of incoming messages", m.messages_in,
             "message_type", _normal),
            ("rocketmq_throughput_in", "Total traffic of incoming messages", m.bytes_in,
             "message_type", _normal),
            ("rocketmq_messages_out", "Total number of outgoing messages", m.messages_out,
             "is_retry", _is_retry),
            ("rocketmq_throughput_out", "Total traffic of outgoing messages", m.bytes_out,
             "is_retry", _is_retry),
        ):  # fmt: skip
            family = CounterMetricFamily(name, doc, labels=[*names, "topic", label, "is_system"])
            for topic, count in counts.totals():
                row = [*values, topic, label_of(topic), _flag(is_system_topic(topic))]
                family.add_metric(row, count)
            yield family
        dlq = CounterMetricFamily(
            "rocketmq_send_to_dlq_messages",
            "Consumer send to DLQ messages",
            labels=[*names, "consumer_group", "is_system"],
        )
        for group, count in m.dead.totals():
            dlq.add_metric([*values, group, "false"], count)
        yield dlq
        yield from self._lag(names, values)
        storage = GaugeMetricFamily(
            "rocketmq_storage_size",
            "Broker storage size",
            labels=[*names, "storage_type", "storage_medium"],
        )
        storage.add_metric([*values, "local", "disk"], self.controller.store.disk_bytes)
        yield storage
        now_ms = int(time.time() * 1000)
        grain = timer_precision(cfg.timer_precision_ms)
        yield from timer_families(self.controller.timers, names, values, now_ms, grain)

    def _lag(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        labels = [*names, "consumer_group", "topic", "is_retry", "is_system"]
        lag: dict[tuple[str, str], int] = {}
        oldest: dict[tuple[str, str], float] = {}
        for group, topic, _, behind, age in queue_lags(self.controller, time.time()):
            key = (group, topic)
            lag[key] = lag.get(key, 0) + behind
            oldest[key] = max(oldest.get(key, 0.0), age or 0.0)
        families = {
            "lag": GaugeMetricFamily(
                "rocketmq_consumer_lag_messages", "Consumer lag messages", labels=labels
            ),
            # Milliseconds, as RocketMQ 5 (the name carries no unit suffix there either).
            "latency": GaugeMetricFamily(
                "rocketmq_consumer_lag_latency", "Consumer lag time", labels=labels
            ),
            "inflight": GaugeMetricFamily(
                "rocketmq_consumer_inflight_messages", "Consumer inflight messages", labels=labels
            ),
            "ready": GaugeMetricFamily(
                "rocketmq_consumer_ready_messages", "Consumer ready messages", labels=labels
            ),
        }  # fmt: skip
        for (group, topic), behind in lag.items():
            retry = topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            row = [*values, group, topic, _flag(retry), _flag(is_system_topic(topic))]
            families["lag"].add_metric(row, behind)
            families["latency"].add_metric(row, round(oldest[(group, topic)] * 1000))
            families["inflight"].add_metric(row, 0)
            families["ready"].add_metric(row, behind)
        yield from families.values()


def hold_families(hold: HoldService[Any, Any]) -> Iterator[Metric]:
    """The hold service's figures by kind of long poll: `pull` (PULL_MESSAGE) and `pop`
    (POP_MESSAGE, NOTIFICATION, gRPC ReceiveMessage).  The names are kept from when only
    pulls were held; a query without `kind` now sums both."""
    families = (
        (GaugeMetricFamily, "longboat_held_pulls", "Long polls parked now",
         hold.held_pulls, hold.held_pops),
        (CounterMetricFamily, "longboat_pull_wakeups", "Long polls woken by an arrival",
         hold.woken, hold.pops_woken),
        (CounterMetricFamily, "longboat_pull_hold_timeouts", "Long polls answered by their timer",
         hold.expired, hold.pops_expired),
    )  # fmt: skip
    for family, name, documentation, pulls, pops in families:
        metric = family(name, documentation, labels=["kind"])
        metric.add_metric(["pull"], pulls)
        metric.add_metric(["pop"], pops)
        yield metric


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
