"""The broker's figures for admins: GET_BROKER_RUNTIME_INFO (28) and GET_BROKER_CONFIG (26).

Runtime info is RocketMQ's table of strings under RocketMQ's keys, so `mqadmin brokerStatus`
and `clusterList` print it: versions, commit-log offsets and disk use, and the traffic figures
`clusterList` reads —

* `putTps` / `getTransferedTps`: messages stored / pulled per second over the last 10 s, 60 s
  and 600 s (RocketMQ's three windows, space-separated);
* `msgPutTotalTodayNow` / `msgGetTotalTodayNow`: messages stored / pulled since the broker
  started, and the same counters' values at the last two local midnights
  (`...TodayMorning`, `...YesterdayMorning`; 0 before the first midnight, as RocketMQ).

Stored messages are counted from the store's arrival calls: each carries the queue's new end,
so the count is the queue's growth (a batch is one call for many messages).  Pulled messages
are counted as pull answers are built (`controller.deliveries`), as the metrics module counts
them.  RocketMQ's thread-pool figures (queue sizes, head wait) are 0: Longboat
serves requests on its event loop, with no pool queue to wait in.

GET_BROKER_CONFIG is every setting in broker.conf form (`key=value` lines), with the listen port
the broker actually bound.
"""

from __future__ import annotations

import collections
import shutil
import time
from collections.abc import Callable, Mapping
from datetime import date
from typing import TYPE_CHECKING

from longboat.protocol import RemotingCommand, RequestCode, fastjson
from longboat.protocol.bodies import DataVersion
from longboat.protocol.codes import VERSION_4_9_8
from longboat.protocol.headers import GetBrokerConfigResponseHeader
from longboat.protocol.table_bodies import encode_kv_table
from longboat.protocol.topic_names import is_lmq
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

BROKER_VERSION_DESC = "V4_9_8"
SAMPLE_INTERVAL_S = 1.0
TPS_WINDOWS_S = (10, 60, 600)


class TrafficCounter:
    """A running total, sampled once a second, read as rates over RocketMQ's windows and as
    the totals at the last two local midnights."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = 0
        self.today_morning = 0
        self.yesterday_morning = 0
        self._clock = clock
        self._day = date.today()
        self._samples: collections.deque[tuple[float, int]] = collections.deque(
            maxlen=int(max(TPS_WINDOWS_S) / SAMPLE_INTERVAL_S) + 1
        )
        self._samples.append((clock(), 0))

    def sample(self) -> None:
        self._samples.append((self._clock(), self.total))
        today = date.today()
        if today != self._day:
            self._day = today
            self.yesterday_morning, self.today_morning = self.today_morning, self.total

    def tps(self) -> str:
        now, total = self._clock(), self.total
        rates = []
        for window in TPS_WINDOWS_S:
            then, then_total = next(
                ((t, n) for t, n in self._samples if now - t <= window), self._samples[-1]
            )
            elapsed = now - then
            rates.append((total - then_total) / elapsed if elapsed > 0 else 0.0)
        return " ".join(f"{r:.2f}" for r in rates)


class BrokerStats:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.boot_ms = int(time.time() * 1000)
        self.puts = TrafficCounter()
        self.gets = TrafficCounter()
        self._queue_ends: dict[tuple[str, int], int] = {}

    def start(self) -> None:
        """Remember where every queue ends, so growth counts only messages stored from now."""
        store = self.controller.store
        for topic in store.topics():
            for queue_id in store.queue_ids(topic):
                self._queue_ends[(topic, queue_id)] = store.max_offset(topic, queue_id)

    def sample(self) -> None:
        self.puts.sample()
        self.gets.sample()

    # ------------------------------------------------------------------ counting

    def on_arrival(
        self, topic: str, queue_id: int, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> None:
        if is_lmq(topic):
            return  # the same message again, dispatched to a light queue: not a new put
        key = (topic, queue_id)
        self.puts.total += max(0, new_max - self._queue_ends.get(key, 0))
        self._queue_ends[key] = new_max

    def delivered(self, topic: str, messages: int, size: int) -> None:
        """Pull deliveries listener."""
        self.gets.total += messages

    # ------------------------------------------------------------------ answering

    def runtime_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=encode_kv_table(self.table()))

    def table(self) -> dict[str, str]:
        store = self.controller.store
        earliest = 0
        if store.max_physical_offset > store.min_physical_offset:
            first = store.read_message(store.min_physical_offset)
            earliest = first.store_timestamp if first is not None else 0
        disk = shutil.disk_usage(self.controller.config.store_path_root_dir)
        figures: dict[str, object] = {
            "brokerVersionDesc": BROKER_VERSION_DESC,
            "brokerVersion": VERSION_4_9_8,
            "bootTimestamp": self.boot_ms,
            "startAcceptSendRequestTimeStamp": 0,
            "commitLogMinOffset": store.min_physical_offset,
            "commitLogMaxOffset": store.max_physical_offset,
            "dispatchBehindBytes": store.max_physical_offset - store.dispatched_physical_offset,
            "commitLogDiskBytes": store.disk_bytes,
            "commitLogDiskRatio": f"{(disk.total - disk.free) / disk.total:.4f}",
            "commitLogDirCapacity": (f"Total : {_human(disk.total)}, Free : {_human(disk.free)}."),
            "earliestMessageTimeStamp": earliest,
            "putTps": self.puts.tps(),
            "getTransferedTps": self.gets.tps(),
            "msgPutTotalTodayNow": self.puts.total,
            "msgPutTotalTodayMorning": self.puts.today_morning,
            "msgPutTotalYesterdayMorning": self.puts.yesterday_morning,
            "msgGetTotalTodayNow": self.gets.total,
            "msgGetTotalTodayMorning": self.gets.today_morning,
            "msgGetTotalYesterdayMorning": self.gets.yesterday_morning,
            "pageCacheLockTimeMills": 0,
        }
        for pool in ("send", "pull", "query"):
            figures[f"{pool}ThreadPoolQueueSize"] = 0
            figures[f"{pool}ThreadPoolQueueHeadWaitTimeMills"] = 0
        return {key: str(value) for key, value in figures.items()}

    def broker_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        ctl = self.controller
        settings = ctl.config.properties()
        settings["listenPort"] = ctl.broker_addr.rsplit(":", 1)[-1]
        body = "".join(f"{key}={value}\n" for key, value in sorted(settings.items()))
        version = fastjson.dumps(DataVersion(timestamp=self.boot_ms).to_dict()).decode()
        return cmd.make_response(
            ext_fields=GetBrokerConfigResponseHeader(version=version).to_ext(),
            body=body.encode("utf-8"),
        )


def _human(size: int) -> str:
    """RocketMQ's humanReadableByteCount (SI off): 1024-based, one decimal, `KiB`..."""
    if size < 1024:
        return f"{size} B"
    units = "KMGTPE"
    value, unit = float(size), -1
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    return f"{value:.1f} {units[unit]}iB"


def install(controller: CoreHost) -> None:
    stats = BrokerStats(controller)
    router = controller.router
    router.register(RequestCode.GET_BROKER_RUNTIME_INFO, stats.runtime_info)
    router.register(RequestCode.GET_BROKER_CONFIG, stats.broker_config)
    controller.deliveries.add(stats.delivered)
    controller.add_arrival_listener(stats.on_arrival)
    controller.add_start_hook(stats.start)
    controller.add_periodic(SAMPLE_INTERVAL_S, stats.sample)
