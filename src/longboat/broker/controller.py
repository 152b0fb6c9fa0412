"""The broker's composition root: builds the store, the managers and the router, installs the
feature modules, and runs the start/stop lifecycle.  It wires; the logic lives in the modules.

Feature modules (the seam, see README.md in this package): each exposes
`install(host) -> None`, typed against `FeatureHost` (`feature_host.py`) or, for the
broker's own request handling, `CoreHost` (`core_host.py`), called once during `start()`
after the store is open and the managers exist.  An install registers request handlers and
middleware on `host.router` and, as it needs, arrival listeners (`add_arrival_listener`),
periodic jobs (`add_periodic`), start and stop hooks (`add_start_hook` / `add_stop_hook`) and
connection-closed listeners.  This is the only module that imports the handler modules.

Lifecycle (state as data):

    NEW --start()--> STARTING --(port bound, store open, features installed, hooks run,
                                 serving, registered)--> RUNNING --stop()--> STOPPING --> STOPPED

    start(): bind the port without accepting (message ids need it) → open the store (recovery
      runs in a worker thread) → managers → install features → start hooks → periodic jobs →
      accept connections → register with the name servers.
    stop(): stop accepting → cancel periodic jobs → answer every held pull → stop hooks
      (reverse order) → let running handlers finish (bounded) → unregister → close
      connections → close the store (flush, checkpoint, consumer offsets).
    stop() is idempotent; a failed start() leaves nothing running.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from enum import Enum
from typing import TYPE_CHECKING

from longboat.acl import BROKER_ADMIN_CODES, AccessControl
from longboat.broker import grpc
from longboat.broker.config import BrokerConfig
from longboat.broker.core.admission import Admission
from longboat.broker.core.append import Appender
from longboat.broker.core.message_filter import MessageFilter
from longboat.broker.core.pop import PopService
from longboat.broker.core.pull import Deliveries, PullRequest
from longboat.broker.core.timers import timer_tags_code
from longboat.broker.core.transactions import TransactionService
from longboat.broker.core_host import CoreHost
from longboat.broker.handlers import (
    assignment,
    client_requests,
    end_transaction,
    locks,
    lookups,
    offset_requests,
    offset_reset,
    pop,
    pull,
    recall,
    runtime_info,
    send,
    send_back,
    topic_admin,
)
from longboat.broker.lifecycle_hooks import LifecycleHooks
from longboat.broker.services import delay_schedule, delivery_timer, timer_sync
from longboat.broker.services.controller_mode import ControllerMode
from longboat.broker.services.delivery_timer import TimerService
from longboat.broker.services.ha.master import HAMaster
from longboat.broker.services.ha.slave import HASlave
from longboat.broker.services.ha.slave_sync import SlaveSynchronize
from longboat.broker.services.registration import (
    BrokerIdentity,
    MasterAddresses,
    NameServerRegistrar,
)
from longboat.broker.state.consumers import ConsumerManager
from longboat.broker.state.hold import HoldService
from longboat.broker.state.producers import ProducerTable
from longboat.broker.state.subscription_groups import SubscriptionGroupTable
from longboat.broker.state.topics import TopicManager
from longboat.protocol import RequestCode
from longboat.protocol.acl_signature import signer
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MASTER_ID
from longboat.remoting import RemotingClient, RemotingServer, Router
from longboat.remoting.tls import client_context
from longboat.store import ConsumerOffsetTable, MessageInner, MessageStore, PutResult
from longboat.store.message_store import ArrivalListener

if TYPE_CHECKING:
    from longboat.broker.services.metrics import BrokerMetrics

log = logging.getLogger(__name__)

# How long the key-index entries of an append wait for those of the appends after it: one
# index write per millisecond, not per send (RocketMQ's dispatcher wakes every millisecond
# too); a lookup by key writes what waits first, so it sees every send answered.
_INDEX_WRITE_DELAY = 0.001

Feature = Callable[[CoreHost], None]

# The broker's own request handling, installed first, then the extras.  Order matters only
# where two modules register the same code (the later one wins), which none do; middleware
# (metrics) wraps every handler of its codes whenever it is installed.
VIP_PORT_OFFSET = 2

CORE_FEATURES: tuple[Feature, ...] = (
    send.install,
    client_requests.install,
    offset_requests.install,
)
EXTRA_FEATURES: tuple[Feature, ...] = (
    send_back.install,
    delay_schedule.install,
    locks.install,
    lookups.install,
    topic_admin.install,
    offset_reset.install,
    runtime_info.install,
    end_transaction.install,
    pop.install,
    assignment.install,
    recall.install,
)
DEFAULT_FEATURES: tuple[Feature, ...] = CORE_FEATURES + EXTRA_FEATURES

# How long stop() lets running handlers (sends waiting for an fsync) finish.
DRAIN_TIMEOUT_S = 5.0
UNREGISTER_TIMEOUT_S = 3.0


class Phase(Enum):
    NEW = "NEW"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"


class BrokerController(LifecycleHooks):
    def __init__(
        self,
        config: BrokerConfig,
        *,
        features: Sequence[Feature] = DEFAULT_FEATURES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`clock` is the wall clock (seconds) of the store and the delay levels."""
        super().__init__()
        self.config = config
        self.clock = clock
        self.phase = Phase.NEW
        self.delay_levels = config.delay_levels
        self.router = Router("broker")
        self.server = RemotingServer(
            self.router,
            config.bind_host,
            config.listen_port,
            expose_hint="brokerIP1 or listenHost",
            limits=config.connection_limits,
            tls=config.server_tls,
            on_connection_closed=self._connection_closed,
        )
        # RocketMQ's "VIP channel": the same service on listenPort - 2, where Java brokers and
        # tools send some requests (a Java slave asks its master for the topic table there).
        # Only for a fixed listenPort; failing to bind it is not fatal.
        self.vip_server: RemotingServer | None = None
        if config.listen_port > VIP_PORT_OFFSET:
            self.vip_server = RemotingServer(
                self.router,
                config.bind_host,
                config.listen_port - VIP_PORT_OFFSET,
                expose_hint="brokerIP1 or listenHost",
                limits=config.connection_limits,
                tls=config.server_tls,
                on_connection_closed=self._connection_closed,
            )
        # Outgoing connections (name servers); broker-to-client requests go out on the
        # clients' own connections.
        # Outgoing requests (registrations) are signed when the broker has an account.
        self.client = RemotingClient(
            signer=signer(config.access_key, config.secret_key) if config.access_key else None,
            tls=client_context() if config.tls_enable else None,
        )
        self.consumers = ConsumerManager()
        self.producers = ProducerTable()
        self.store_host = config.advertised_ip
        self.broker_addr = ""  # host:port, once start() bound the port
        self._features = tuple(features)
        # plain_acl.yml's rules when ACL is on (remoting's middleware; gRPC asks it too)
        self.access_control: AccessControl | None = None
        self.deliveries = Deliveries()
        self.metrics: BrokerMetrics | None = None  # set at start when metricsPort > 0
        self.grpc: grpc.GrpcEndpoint | None = None  # set at start when grpcListenPort >= 0
        # Replication: a master's HA server, or a slave's stream from its master (at start).
        self.ha_master: HAMaster | None = None
        self.ha_slave: HASlave | None = None
        self.slave_sync: SlaveSynchronize | None = None
        # Controller mode (enableControllerMode): the controllers choose this broker's role.
        self.controller_mode: ControllerMode | None = None
        # Set by start():
        self.store: MessageStore
        self.offsets: ConsumerOffsetTable
        self.topics: TopicManager
        self.subscription_groups: SubscriptionGroupTable
        self.hold: HoldService[PullRequest, MessageFilter]
        self.admission: Admission
        self.appender: Appender
        self.transactions: TransactionService
        self.pop: PopService
        self.timers: TimerService | None = None
        self.registrar: NameServerRegistrar

    # ------------------------------------------------------------------ the seam

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """`listener(topic, queue_id, new_max_offset, tags_code, properties)` on every append
        (on the appending thread: the event loop for everything the broker stores)."""
        self.store.add_arrival_listener(listener)

    # ------------------------------------------------------------------ storing

    def _recovered_tags_code(self, msg: MessageExt) -> int | None:
        """The due time a re-dispatched schedule- or timer-queue entry carries (the store's
        recovery rebuilds consume-queue entries from the commit log after a crash)."""
        code = self.delay_levels.tags_code_of(msg)
        return code if code is not None else timer_tags_code(msg)

    async def put_message(self, msg: MessageInner) -> PutResult:
        """Store one message the way the send path does, durability included."""
        return await self.appender.put_message(msg)

    # ------------------------------------------------------------------ name servers

    async def register_now(self) -> bool:
        """Register with every name server now; True when all accepted."""
        return await self.registrar.register()

    async def registered(self) -> None:
        """Wait until the topic changes made so far are registered with the name servers
        (only those topics, unless something needed the whole table)."""
        await self.registrar.settle()

    def register_soon(self, changed: list[TopicConfig] | None = None) -> None:
        """Register `changed` topics (None: the whole table) with the name servers soon."""
        if self.phase in (Phase.STARTING, Phase.RUNNING):
            self.registrar.register_soon(changed)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self.phase is not Phase.NEW:
            raise RuntimeError(f"start() on a broker that is {self.phase.value}")
        self.phase = Phase.STARTING
        try:
            await self._start()
        except BaseException:
            await self._shutdown()
            raise
        self.phase = Phase.RUNNING
        log.info(
            "broker %s (cluster %s, id %d) serving at %s, store at %s",
            self.config.broker_name,
            self.config.broker_cluster_name,
            self.config.broker_id,
            self.broker_addr,
            self.config.store_path_root_dir,
        )

    async def _start(self) -> None:
        cfg = self.config
        if cfg.acl_enable:
            # Added first, so it is the outermost middleware: nothing runs for a refused peer.
            self.access_control = AccessControl(
                cfg.plain_acl_file.expanduser(), admin_codes=BROKER_ADMIN_CODES
            )
            self.router.use(self.access_control)
            log.info("ACL on: requests are checked against %s", cfg.plain_acl_file)
        await self.server.start(serving=False)
        port = self.server.port
        if self.vip_server is not None:
            try:
                await self.vip_server.start(serving=False)
            except OSError as exc:
                log.warning(
                    "VIP port %d (listenPort - 2) not bound, so Java slaves and tools that use "
                    "it cannot reach this broker there: %s",
                    self.vip_server.port,
                    exc,
                )
                self.vip_server = None
        self.broker_addr = f"{self.store_host}:{port}"
        if cfg.enable_controller_mode:
            # The controllers give the id, and the log may need its tail cut before it opens.
            self.controller_mode = ControllerMode(cfg, self.client, self.broker_addr)
            broker_id = await self.controller_mode.prepare(cfg.store_config(port))
            self.config = cfg = cfg.updated(brokerId=broker_id, brokerRole="SLAVE")
        self.store = MessageStore(
            cfg.store_config(port),
            clock=self.clock,
            tags_code_resolver=self._recovered_tags_code,
        )
        await asyncio.to_thread(self.store.open)
        # Every append runs on this loop; the key index follows the sends' answers out, the
        # entries of every append of the next millisecond written together.
        loop = asyncio.get_running_loop()
        self.store.defer_indexing(lambda write: loop.call_later(_INDEX_WRITE_DELAY, write))
        self.offsets = self.store.offsets
        self.subscription_groups = SubscriptionGroupTable(
            cfg.store_path_root_dir / "config" / "subscriptionGroup.json", clock=self.clock
        )
        self.subscription_groups.load()
        self.topics = TopicManager(
            self.store.topic_configs,
            auto_create=cfg.auto_create_topic_enable,
            default_queue_nums=cfg.default_topic_queue_nums,
            schedule_queue_nums=self.delay_levels.max_level,
            on_change=self.register_soon,
            trace_topic=cfg.msg_trace_topic_name if cfg.trace_topic_enable else None,
        )
        self.topics.bootstrap()
        ha_port = await self._start_replication()
        self.registrar = NameServerRegistrar(
            self.client,
            cfg.namesrv_addrs,
            BrokerIdentity(
                cfg.broker_cluster_name,
                cfg.broker_name,
                cfg.broker_id,
                self.broker_addr,
                f"{self.store_host}:{ha_port}",
            ),
            self.topics.wrapper,
            self.topics.data_version,
            timeout_s=cfg.register_broker_timeout_mills / 1000,
        )
        self.registrar.add_master_listener(self._master_changed)
        self.admission = Admission(cfg, self.topics)
        self.appender = Appender(
            cfg,
            self.store,
            self.delay_levels,
            self.clock,
            self.ha_master if cfg.broker_role == "SYNC_MASTER" else None,
        )
        # The pull path builds its hold service (answered by its own reader).
        self.hold = pull.install(self)
        # Transactional halves of both protocols: decisions read back before anything is
        # served, checked periodically; each protocol adds its way to reach producers.
        self.transactions = TransactionService(self)
        self.transactions.load()
        # A slave's halves are checked by its master; in controller mode the role changes.
        if not cfg.is_slave or cfg.enable_controller_mode:
            self.add_periodic(cfg.transaction_check_interval / 1000, self._check_transactions)
        # Pop consumption's one state, served by remoting and gRPC alike, its long polls
        # parked in the pulls' hold service; closed last.
        self.pop = PopService(self, self.hold)
        self.pop.open()
        self.add_stop_hook(self.pop.close)
        # Timer messages of both protocols (RIP-43) and their recall.
        self.timers = delivery_timer.install(self)
        if cfg.metrics_port:
            # Imported only when on: prometheus-client is a tenth of an idle broker's memory.
            from longboat.broker.services import metrics

            self.metrics = metrics.install(self)
        for install in self._features:
            install(self)
        if cfg.grpc_listen_port >= 0:
            self.grpc = grpc.install(self)
        if self.controller_mode is not None:
            self._install_controller_mode(self.controller_mode)
        await self._run_start_hooks()
        self.add_periodic(cfg.register_name_server_period / 1000, self.registrar.register)
        self._start_periodic()
        await self.server.serve()
        if self.vip_server is not None:
            await self.vip_server.serve()
        await self.registrar.register()
        if self.controller_mode is not None:
            await self.controller_mode.heartbeat()
            await self.controller_mode.sync_role()

    async def _start_replication(self) -> int:
        """A master starts its HA server, a slave its stream from the master; returns the HA
        port registered with the name servers."""
        cfg = self.config
        heartbeat_s = cfg.ha_send_heartbeat_interval / 1000
        if cfg.is_slave:
            self.ha_slave = HASlave(
                self.store,
                cfg.ha_master_address,
                heartbeat_s=heartbeat_s,
                housekeeping_s=cfg.ha_housekeeping_interval / 1000,
                hello_id=cfg.broker_id if cfg.enable_controller_mode else None,
            )
            self.ha_slave.start()
            self.slave_sync = SlaveSynchronize(
                self.client,
                self.topics,
                self.offsets,
                self.subscription_groups,
                self.store.config.config_dir / delay_schedule.DELAY_OFFSET_FILE,
                cfg.register_broker_timeout_mills / 1000,
                self.store.config.config_dir / timer_sync.SYNCED_FILE,
                lambda: self.store.max_physical_offset,
            )
            self.add_periodic(cfg.slave_synchronize_interval / 1000, self.slave_sync.sync_all)
            return cfg.ha_port or self.server.port + 1
        self.ha_master = HAMaster(
            self.store,
            host=cfg.bind_host,
            port=cfg.ha_port,
            heartbeat_s=heartbeat_s,
            fall_behind_max=cfg.ha_slave_fallbehind_max,
        )
        await self.ha_master.start()
        return self.ha_master.port

    def _check_transactions(self) -> None:
        if not self.config.is_slave:
            self.transactions.check()

    def _install_controller_mode(self, mode: ControllerMode) -> None:
        cfg = self.config
        mode.attach(self)
        self.router.register(RequestCode.GET_BROKER_EPOCH_CACHE, mode.epoch_cache)
        self.router.register(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, mode.role_changed)
        self.add_periodic(cfg.broker_heartbeat_interval / 1000, mode.heartbeat)
        self.add_periodic(cfg.sync_broker_metadata_period / 1000, mode.sync_role)
        self.add_periodic(cfg.broker_heartbeat_interval / 1000, mode.check_sync_state_set)

    # Controller mode's role switches (`controller_mode.RoleHost`).

    async def become_master(self) -> str:
        if self.ha_slave is not None:
            await self.ha_slave.stop()
            self.ha_slave = None
        if self.slave_sync is not None:
            self.slave_sync.master_addr = None
        self.config = cfg = self.config.updated(brokerId=MASTER_ID, brokerRole="ASYNC_MASTER")
        was_master = self.ha_master is not None  # re-elected at a new epoch
        if self.ha_master is None:
            self.ha_master = HAMaster(
                self.store,
                host=cfg.bind_host,
                port=cfg.ha_port,
                heartbeat_s=cfg.ha_send_heartbeat_interval / 1000,
                fall_behind_max=cfg.ha_slave_fallbehind_max,
                expect_hello=True,
            )
            await self.ha_master.start()
        self._role_to_appender()
        ha_addr = f"{self.store_host}:{self.ha_master.port}"
        if not was_master:
            await self._run_master_hooks(starting=True)
        self.registrar.identity = dataclasses.replace(
            self.registrar.identity, broker_id=MASTER_ID, ha_addr=ha_addr
        )
        await self.registrar.register()
        return ha_addr

    async def become_slave(self, broker_id: int, master_addr: str, master_ha_addr: str) -> None:
        # Sends are refused from here on, before the master's services stop.
        self.config = cfg = self.config.updated(brokerId=broker_id, brokerRole="SLAVE")
        self._role_to_appender()
        if self.ha_master is not None:
            await self._run_master_hooks(starting=False)
            await self.ha_master.stop()
            self.ha_master = None
        self.registrar.identity = dataclasses.replace(self.registrar.identity, broker_id=broker_id)
        if self.ha_slave is None:
            self.ha_slave = HASlave(
                self.store,
                heartbeat_s=cfg.ha_send_heartbeat_interval / 1000,
                housekeeping_s=cfg.ha_housekeeping_interval / 1000,
                hello_id=broker_id,
            )
            self.ha_slave.start()
        self.ha_slave.update_master_address(master_ha_addr)
        if self.slave_sync is not None and self.slave_sync.master_addr != master_addr:
            self.slave_sync.master_addr = master_addr
            self._spawn(self.slave_sync.sync_all())
        await self.registrar.register()

    def _role_to_appender(self) -> None:
        """Controller mode: the append path follows the role.  A slave refuses sends; a
        master's sends wait for every other member of the SyncStateSet (allAckInSyncStateSet,
        as the master counts it: `ControllerMode.waiting_for`) or, with inSyncReplicas > 1,
        for one slave."""
        mode = self.controller_mode
        assert mode is not None
        cfg = self.config
        waits = cfg.all_ack_in_sync_state_set or cfg.in_sync_replicas > 1
        replication = self.ha_master if waits and not cfg.is_slave else None

        def in_sync() -> frozenset[int] | None:
            return mode.waiting_for if cfg.all_ack_in_sync_state_set else None

        self.appender.role_changed(cfg, replication, in_sync)

    def connected_slaves(self) -> dict[int, int]:
        if self.ha_master is None:
            return {}
        return {s.broker_id: s.ack_offset for s in self.ha_master.slaves if s.broker_id is not None}

    def _master_changed(self, master: MasterAddresses) -> None:
        """A slave learns its master from the name server (unless haMasterAddress is set);
        in controller mode from the controllers instead."""
        if self.controller_mode is not None:
            return
        if self.ha_slave is not None and not self.config.ha_master_address:
            self.ha_slave.update_master_address(master.ha_addr)
        if self.slave_sync is not None and master.addr != self.slave_sync.master_addr:
            self.slave_sync.master_addr = master.addr
            self._spawn(self.slave_sync.sync_all())

    async def stop(self) -> None:
        """Graceful shutdown; idempotent."""
        if self.phase in (Phase.STOPPING, Phase.STOPPED, Phase.NEW):
            self.phase = Phase.STOPPED
            return
        self.phase = Phase.STOPPING
        await self._shutdown()
        log.info("broker %s stopped", self.config.broker_name)

    async def _shutdown(self) -> None:
        self.server.stop_accepting()
        if self.vip_server is not None:
            self.vip_server.stop_accepting()
        await self._stop_periodic()
        hold = getattr(self, "hold", None)
        if hold is not None:
            answered = hold.answer_all()
            if answered:
                log.info("answered %d held pull(s) and parked pop(s) at shutdown", answered)
        await self._run_stop_hooks()
        if self.controller_mode is not None and self.ha_master is not None:
            await self._run_master_hooks(starting=False)
        try:
            await asyncio.wait_for(self.router.drain(), DRAIN_TIMEOUT_S)
        except TimeoutError:
            log.warning("some requests were still running after %.0f s", DRAIN_TIMEOUT_S)
        registrar = getattr(self, "registrar", None)
        if registrar is not None:
            try:
                await asyncio.wait_for(registrar.unregister(), UNREGISTER_TIMEOUT_S)
            except TimeoutError:
                log.warning("unregistering from the name servers timed out")
        await self.server.close()
        if self.vip_server is not None:
            await self.vip_server.close()
        await self.client.close()
        for replication in (self.ha_master, self.ha_slave):
            if replication is not None:
                await replication.stop()
        store = getattr(self, "store", None)
        if store is not None:
            await asyncio.to_thread(store.close)
        self.phase = Phase.STOPPED
