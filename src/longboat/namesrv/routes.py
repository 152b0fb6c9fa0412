"""The name server's route table: which brokers are alive and which topics they serve.

Pure data with an injected clock (seconds, monotonic): the request handlers and the expiry job
drive it, tests drive it directly.

State (RocketMQ's RouteInfoManager, one table per question a client asks):

    clusters:  cluster name → broker names
    brokers:   broker name → BrokerData (cluster, {broker id: address})
    topics:    topic → {broker name: QueueData}
    live:      broker address → Lease(last registration time, data version, connection key)

Invariants: every address in `brokers` has a lease in `live` and vice versa; a broker name is in
`brokers` iff it has at least one address; a topic is in `topics` iff some broker name serves it.
Queue data comes only from masters (id 0) and is replaced when the master's data version
changed (or on its first registration): topics missing from a whole table are dropped for that
broker, so a deleted topic leaves the routes (RocketMQ 4.x keeps it until the broker expires);
an incremental registration (the topics created since the last one) is merged instead, and so is
every registration of a RocketMQ 5 broker, which sends its newest topics alone.
A broker leaves — with its queue data — when it unregisters, when its connection closes, or
when its lease is older than the expiry (120 s).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from longboat.protocol.bodies import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicRouteData,
)
from longboat.protocol.topic_names import kept_name
from longboat.protocol.types import MASTER_ID

log = logging.getLogger(__name__)

BROKER_EXPIRY_S = 120.0


@dataclass(slots=True)
class Lease:
    broker_name: str
    broker_id: int
    last_update: float
    data_version: DataVersion
    ha_addr: str
    channel: Hashable | None


@dataclass(frozen=True, slots=True)
class Registered:
    """What REGISTER_BROKER answers: for a slave, its master's address and HA address."""

    master_addr: str | None
    ha_addr: str | None


class RouteTable:
    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, expiry_s: float = BROKER_EXPIRY_S
    ) -> None:
        self._clock = clock
        self.expiry_s = expiry_s
        self._clusters: dict[str, set[str]] = {}
        self._brokers: dict[str, BrokerData] = {}
        self._topics: dict[str, dict[str, QueueData]] = {}
        # Topics with the same queue data share one QueueData, never changed in place (a
        # query answers copies): 100,000 topics of one broker hold a handful, not 100,000.
        self._queue_datas: dict[tuple[str, int, int, int, int], QueueData] = {}
        self._live: dict[str, Lease] = {}

    # ------------------------------------------------------------------ registration

    def register(
        self,
        cluster: str,
        broker_name: str,
        broker_addr: str,
        broker_id: int,
        ha_addr: str,
        topic_configs: dict[str, TopicConfig],
        data_version: DataVersion,
        channel: Hashable | None = None,
        *,
        incremental: bool = False,
    ) -> Registered:
        """`incremental`: `topic_configs` holds only created or changed topics, merged into
        the broker's; otherwise it is the broker's whole table."""
        self._clusters.setdefault(cluster, set()).add(broker_name)
        data = self._brokers.get(broker_name)
        if data is None:
            data = self._brokers[broker_name] = BrokerData(cluster, broker_name, {})
        data.cluster = cluster
        # One address per id, one id per address: a broker restarted under another id or on
        # another port replaces its old entry.
        for bid, addr in list(data.broker_addrs.items()):
            if (addr == broker_addr and bid != broker_id) or (
                bid == broker_id and addr != broker_addr
            ):
                del data.broker_addrs[bid]
                self._live.pop(addr, None)
        data.broker_addrs[broker_id] = broker_addr
        previous = self._live.get(broker_addr)
        self._live[broker_addr] = Lease(
            broker_name, broker_id, self._clock(), data_version, ha_addr, channel
        )
        if broker_id == MASTER_ID and (previous is None or previous.data_version != data_version):
            self._update_queue_data(broker_name, topic_configs, whole=not incremental)
        if broker_id == MASTER_ID:
            return Registered(None, None)
        master = data.broker_addrs.get(MASTER_ID)
        master_lease = self._live.get(master) if master else None
        return Registered(master, master_lease.ha_addr if master_lease else None)

    def _update_queue_data(
        self, broker_name: str, configs: dict[str, TopicConfig], *, whole: bool
    ) -> None:
        if whole:
            for topic, queues in list(self._topics.items()):
                dropped = topic not in configs and queues.pop(broker_name, None) is not None
                if dropped and not queues:
                    del self._topics[topic]
        shared = self._queue_datas
        for topic, cfg in configs.items():
            key = (
                broker_name,
                cfg.read_queue_nums,
                cfg.write_queue_nums,
                cfg.perm,
                cfg.topic_sys_flag,
            )
            queue_data = shared.get(key)
            if queue_data is None:
                queue_data = shared[key] = QueueData(*key)
            known = self._topics.get(topic)
            if known is None:
                known = self._topics[kept_name(topic)] = {}
            known[broker_name] = queue_data

    def data_version_changed(self, broker_addr: str, version: DataVersion) -> bool:
        """QUERY_DATA_VERSION: does `version` differ from the last registered one?  Also
        renews the broker's lease, as RocketMQ does."""
        lease = self._live.get(broker_addr)
        if lease is None:
            return True
        lease.last_update = self._clock()
        return lease.data_version != version

    def data_version(self, broker_addr: str) -> DataVersion | None:
        lease = self._live.get(broker_addr)
        return lease.data_version if lease is not None else None

    # ------------------------------------------------------------------ removal

    def unregister(self, broker_name: str, broker_addr: str, broker_id: int) -> bool:
        data = self._brokers.get(broker_name)
        if data is None or data.broker_addrs.get(broker_id) != broker_addr:
            return False
        self._remove_addr(broker_addr)
        return True

    def remove_channel(self, channel: Hashable) -> list[str]:
        """A broker connection closed: remove every broker address registered over it."""
        gone = [addr for addr, lease in self._live.items() if lease.channel == channel]
        for addr in gone:
            self._remove_addr(addr)
        return gone

    def expire(self) -> list[str]:
        """Remove brokers whose lease is older than the expiry; their addresses."""
        limit = self._clock() - self.expiry_s
        gone = [addr for addr, lease in self._live.items() if lease.last_update < limit]
        for addr in gone:
            log.warning("broker %s expired: no registration for %.0f s", addr, self.expiry_s)
            self._remove_addr(addr)
        return gone

    def delete_topic(self, topic: str) -> bool:
        return self._topics.pop(topic, None) is not None

    def _remove_addr(self, addr: str) -> None:
        lease = self._live.pop(addr, None)
        if lease is None:
            return
        name = lease.broker_name
        data = self._brokers.get(name)
        if data is not None:
            for bid in [b for b, a in data.broker_addrs.items() if a == addr]:
                del data.broker_addrs[bid]
            if data.broker_addrs:
                return
            del self._brokers[name]
            self._queue_datas = {k: q for k, q in self._queue_datas.items() if k[0] != name}
            names = self._clusters.get(data.cluster)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._clusters[data.cluster]
        for topic, queues in list(self._topics.items()):
            if queues.pop(name, None) is not None and not queues:
                del self._topics[topic]
        log.info("broker %s (%s) removed from the routes", name, addr)

    # ------------------------------------------------------------------ queries

    def route(self, topic: str) -> TopicRouteData | None:
        """The topic's route: None unless it has queue data on at least one known broker."""
        queues = self._topics.get(topic)
        if not queues:
            return None
        names = sorted(n for n in queues if n in self._brokers)
        if not names:
            return None
        return TopicRouteData(
            queue_datas=[_copy_queue(queues[n]) for n in names],
            broker_datas=[
                BrokerData(self._brokers[n].cluster, n, dict(self._brokers[n].broker_addrs))
                for n in names
            ],
        )

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={
                n: BrokerData(d.cluster, n, dict(d.broker_addrs)) for n, d in self._brokers.items()
            },
            cluster_addr_table={c: sorted(names) for c, names in self._clusters.items()},
        )

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def broker_addrs(self) -> list[str]:
        return sorted(self._live)


def _copy_queue(q: QueueData) -> QueueData:
    return QueueData(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
