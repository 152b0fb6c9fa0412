"""Broker settings: RocketMQ's `broker.conf` keys and defaults, with environment and
command-line overrides.

Every setting has one Java-style key (the broker.conf name: `brokerName`, `listenPort`,
`brokerIP1`, ...) and one Python attribute (its snake_case form: `broker_name`, `listen_port`,
`broker_ip1`).  Sources apply in order, later winning: defaults, the broker.conf file,
`LONGBOAT_<UPPER_SNAKE>` environment variables (plus RocketMQ's own `NAMESRV_ADDR`), then
command-line `--key value` pairs.  An unknown key is warned about and ignored (a broker.conf
written for RocketMQ carries keys we do not implement); a value that does not parse is refused
with `ConfigError` naming the key and where it came from — a broker must not start on a
setting it misread.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longboat.broker.delay_levels import DelayLevels
from longboat.broker.java_properties import parse_properties
from longboat.protocol.delay_ladder import DEFAULT_MESSAGE_DELAY_LEVEL
from longboat.protocol.ids import host_bytes
from longboat.protocol.types import PERM_READ, PERM_WRITE
from longboat.remoting import ConnectionLimits
from longboat.remoting.tls import ServerTls, TlsMode
from longboat.store import FlushDiskType, StoreConfig

log = logging.getLogger(__name__)

ENV_PREFIX = "LONGBOAT_"
LOOPBACK = "127.0.0.1"
WILDCARD = "0.0.0.0"
CONSUME_QUEUE_ENTRY_SIZE = 20


def longboat_home() -> Path:
    """`$LONGBOAT_HOME`, else `~/.longboat`."""
    home = os.environ.get("LONGBOAT_HOME")
    return Path(home).expanduser() if home else Path.home() / ".longboat"


def default_data_dir() -> Path:
    """`$LONGBOAT_HOME/store`, else `~/.longboat/store`."""
    return longboat_home() / "store"


def default_acl_file() -> Path:
    """`$LONGBOAT_HOME/conf/plain_acl.yml` (RocketMQ: `$ROCKETMQ_HOME/conf/plain_acl.yml`)."""
    return longboat_home() / "conf" / "plain_acl.yml"


BROKER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE")


class ConfigError(ValueError):
    """A setting is wrong (the operator's to fix): the message names the key and its source."""


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Every setting, fixed once built and validated when built (a bad combination raises
    ConfigError naming the key).  A change is a new object (`updated`), handed to whoever
    needs it: nothing sees a setting change under it."""

    broker_cluster_name: str = "DefaultCluster"
    # RocketMQ defaults to the host name; a fixed name keeps routes stable across hosts.
    broker_name: str = "broker-a"
    broker_id: int = 0
    listen_port: int = 10911
    # Ours: the address the broker binds.  Empty: every interface when brokerIP1 is set (the
    # operator said where clients reach it, as RocketMQ binds), else loopback only, so a
    # broker without authentication is not exposed by default (see `bind_host`).
    listen_host: str = ""
    # Name servers, `host:port` separated by `;` (RocketMQ's format).
    namesrv_addr: str = ""
    store_path_root_dir: Path = field(default_factory=default_data_dir)
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    # The address advertised in routes and message ids; empty = this host's first
    # non-loopback IPv4 address.
    broker_ip1: str = ""
    broker_permission: int = PERM_READ | PERM_WRITE
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8
    # Ours: the most queues a topic may have (UPDATE_AND_CREATE_TOPIC, a group's retry
    # queues); every per-queue loop (GET_CONSUME_STATS, routes) is bounded by it.
    max_topic_queue_nums: int = 1024
    max_message_size: int = 4 * 1024 * 1024
    file_reserved_time: float = 72.0
    delete_when: str = "04"
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * CONSUME_QUEUE_ENTRY_SIZE
    flush_interval_commit_log: int = 500
    sync_flush_timeout: int = 5000
    # Percent watermarks of the store's disk (RocketMQ's names, defaults and bounds: the
    # store takes diskMaxUsedSpaceRatio within 10..95, diskSpaceWarningLevelRatio within
    # 35..90, diskSpaceCleanForciblyRatio within 30..85); see StoreConfig.
    disk_max_used_space_ratio: int = 75
    disk_space_warning_level_ratio: int = 90
    disk_space_clean_forcibly_ratio: int = 85
    clean_file_forcibly_enable: bool = True
    # RocketMQ's key-index file sizes: hash slots and entries per file (files are sparse).
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    register_name_server_period: int = 30_000
    register_broker_timeout_mills: int = 6000
    # How often the topics' routes assignment by the broker shares are looked up again at the
    # name servers (RocketMQ 5.3's key and default; broker/services/topic_routes.py).
    load_balance_poll_name_server_interval: int = 30_000
    # Message traces (RocketMQ's keys): the region and trace switch every send answer carries
    # (a client writes no trace of a message whose broker says traceOn=false), and with
    # traceTopicEnable the trace topic msgTraceTopicName is created at start (one queue), so
    # traces need no auto-creation.
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    # Ours: the most client connections served at once (over it, requests are answered
    # SYSTEM_BUSY and the connection closed).
    max_connections: int = 10_000
    # RocketMQ's Netty setting: a connection with no traffic at all this long is closed.
    server_channel_max_idle_time_seconds: int = 120
    # Ours (RocketMQ hard-codes 120 s): a client connection silent this long is dropped.
    channel_expired_timeout: int = 120_000
    # Ours: bounds that keep memory bounded when clients or the disk fall behind.
    max_held_pull_requests: int = 100_000
    max_pending_sync_flushes: int = 10_000
    # RocketMQ's ACL switch: every request checked against `plainAclFile` (reloaded when it
    # changes).
    acl_enable: bool = False
    plain_acl_file: Path = field(default_factory=default_acl_file)
    # Ours: the account this broker signs its own requests with (registrations with name
    # servers whose ACL is on).
    access_key: str = ""
    secret_key: str = ""
    # RocketMQ's TLS settings (broker.conf keys `tls.server.mode`, `tls.server.certPath`, ...):
    # disabled / permissive (TLS and plain on one port) / enforcing; PEM files.
    tls_server_mode: str = "disabled"
    tls_server_cert_path: str = ""
    tls_server_key_path: str = ""
    tls_server_key_password: str = ""
    tls_server_need_client_auth: str = "none"
    tls_server_trust_cert_path: str = ""
    # `tls.enable`: the broker's own connections (to name servers) use TLS.
    tls_enable: bool = False
    # Ours: the Prometheus endpoint's port on listen_host (0 = no endpoint).
    metrics_port: int = 0
    # The RocketMQ 5 gRPC endpoint (apache.rocketmq.v2) on listen_host; 0 = any free port,
    # -1 = no endpoint.  Off unless asked: a RocketMQ broker serves no gRPC (its proxy does, on
    # 8081), so two brokers from RocketMQ's broker.conf files start side by side on one host.
    # `longboat up` turns it on, on the proxy's 8081.
    grpc_listen_port: int = -1
    # The invisible durations a gRPC receive may ask for (RocketMQ proxy's bounds).
    grpc_min_invisible_time_mills: int = 10_000
    grpc_max_invisible_time_mills: int = 12 * 3600 * 1000
    # SQL92 subscriptions (`MessageSelector.bySql`); off by default, as in RocketMQ.
    enable_property_filter: bool = False
    # Light message queues (RIP-28, RocketMQ's keys): with both, a message's
    # INNER_MULTI_DISPATCH `%LMQ%` names each get the message (store/lmq.py), and pulls
    # of a `%LMQ%` topic are served without a topic config.
    enable_lmq: bool = False
    enable_multi_dispatch: bool = False
    # Transactional messages, remoting and gRPC (RocketMQ 4.9's keys and defaults): refuse
    # halves altogether; how often undecided halves are checked back with their producer,
    # how many check-backs before a half is discarded, and how old (ms) a half must be
    # before its first check.
    reject_transaction_message: bool = False
    transaction_check_interval: int = 60_000
    transaction_check_max: int = 15
    transaction_time_out: int = 6_000
    # Timer messages (RocketMQ 5's keys and defaults): whether they are served at all (off,
    # a timer message is refused as RocketMQ refuses it, and GET_BROKER_CONFIG's
    # `timerWheelEnable=false` tells clients to send delay levels instead), the delivery
    # times' grain (a timer fires at the first multiple at or after its time; RocketMQ's
    # grains only: 100, 200, 500 or 1,000 ms, see `core/timers.timer_precision`) and the
    # farthest one accepted.
    timer_wheel_enable: bool = True
    timer_precision_ms: int = 1000
    timer_max_delay_sec: int = 3 * 24 * 3600
    # Replication (RocketMQ 4.x's keys): ASYNC_MASTER answers sends at once and streams to its
    # slaves; SYNC_MASTER answers once a slave has the bytes (within syncFlushTimeout); SLAVE
    # (brokerId > 0) follows its master and refuses sends.  The HA port: -1 = listenPort + 1
    # (any free port when listenPort is 0).  A slave's master HA address: configured, else
    # learned from the name server when the slave registers.
    broker_role: str = "ASYNC_MASTER"
    ha_listen_port: int = -1
    ha_master_address: str = ""
    ha_send_heartbeat_interval: int = 5000
    ha_housekeeping_interval: int = 20_000
    # RocketMQ's haSlaveFallbehindMax: a SYNC_MASTER send does not wait for a slave further
    # behind than this many bytes (answered SLAVE_NOT_AVAILABLE at once).
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    # Ours (RocketMQ hard-codes 10 s): how often a slave copies its master's metadata.
    slave_synchronize_interval: int = 10_000
    # Reads from slaves (RocketMQ's keys and defaults): with slaveReadEnable a pull answer
    # sends a consumer more than accessMessageInMemoryMaxRatio percent of this machine's
    # memory behind the log's end to its group's whichBrokerWhenConsumeSlowly (a slave), and
    # one caught up back to the group's brokerId (the master); without it, always the master.
    slave_read_enable: bool = False
    access_message_in_memory_max_ratio: int = 40
    # Controller mode (RocketMQ 5's keys, RIP-44; docs/replication.md): the controllers
    # (`controllerAddr`, `;`-separated) give this broker its id and elect its group's master;
    # brokerId and brokerRole are then ignored.  With allAckInSyncStateSet a send is answered
    # once every member of the SyncStateSet has it; a slave stays in the set while it catches
    # up with the master at least every haMaxTimeSlaveNotCatchup ms.
    enable_controller_mode: bool = False
    controller_addr: str = ""
    all_ack_in_sync_state_set: bool = False
    in_sync_replicas: int = 1
    ha_max_time_slave_not_catchup: int = 15_000
    broker_heartbeat_interval: int = 1000
    controller_heart_beat_timeout_mills: int = 10_000
    sync_broker_metadata_period: int = 1000
    broker_election_priority: int = 2**31 - 1

    # ------------------------------------------------------------------ derived

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    @property
    def controller_addrs(self) -> list[str]:
        return [a.strip() for a in self.controller_addr.split(";") if a.strip()]

    @property
    def is_slave(self) -> bool:
        return self.broker_role == "SLAVE"

    @property
    def ha_port(self) -> int:
        """The HA server's port to bind (0: any free one)."""
        if self.ha_listen_port >= 0:
            return self.ha_listen_port
        return self.listen_port + 1 if self.listen_port else 0

    @property
    def delay_levels(self) -> DelayLevels:
        return DelayLevels.parse(self.message_delay_level)

    @property
    def server_tls(self) -> ServerTls:
        return ServerTls(
            mode=TlsMode.parse(self.tls_server_mode),
            cert_path=self.tls_server_cert_path,
            key_path=self.tls_server_key_path,
            key_password=self.tls_server_key_password,
            need_client_auth=self.tls_server_need_client_auth,
            trust_cert_path=self.tls_server_trust_cert_path,
        )

    @property
    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits(
            max_connections=self.max_connections,
            idle_timeout_s=float(self.server_channel_max_idle_time_seconds),
            max_connections_setting="maxConnections",
            idle_timeout_setting="serverChannelMaxIdleTimeSeconds",
        )

    @property
    def bind_host(self) -> str:
        """The address the broker listens on: `listenHost`, else all interfaces when
        `brokerIP1` is set, else 127.0.0.1."""
        if self.listen_host:
            return self.listen_host
        return WILDCARD if self.broker_ip1 else LOOPBACK

    @property
    def advertised_ip(self) -> str:
        """What routes and message ids carry: `brokerIP1`, else the bound address (this
        host's first non-loopback address when bound to every interface)."""
        if self.broker_ip1:
            return self.broker_ip1
        host = self.bind_host
        return host_address() if host in (WILDCARD, "::") else host

    def store_config(self, store_port: int) -> StoreConfig:
        """The store's settings; `store_port` is the port the broker actually listens on (it
        goes into every record's store-host field and message id)."""
        return StoreConfig(
            root_dir=self.store_path_root_dir,
            commit_log_segment_size=self.mapped_file_size_commit_log,
            consume_queue_entries_per_file=max(
                1, self.mapped_file_size_consume_queue // CONSUME_QUEUE_ENTRY_SIZE
            ),
            flush_disk_type=self.flush_disk_type,
            flush_interval_ms=self.flush_interval_commit_log,
            sync_flush_timeout_ms=self.sync_flush_timeout,
            max_message_size=self.max_message_size,
            file_reserved_time_hours=self.file_reserved_time,
            delete_when=int(self.delete_when),
            disk_max_used_space_ratio=_percent(self.disk_max_used_space_ratio, 10, 95),
            disk_space_warning_level_ratio=_percent(self.disk_space_warning_level_ratio, 35, 90),
            disk_space_clean_forcibly_ratio=_percent(self.disk_space_clean_forcibly_ratio, 30, 85),
            clean_file_forcibly_enable=self.clean_file_forcibly_enable,
            index_hash_slots=self.max_hash_slot_num,
            index_max_entries=self.max_index_num,
            store_host=self.advertised_ip,
            store_port=store_port,
            max_transfer_bytes=self.max_transfer_bytes_on_message_in_memory,
            max_transfer_count=self.max_transfer_count_on_message_in_memory,
            enable_multi_dispatch=self.enable_lmq and self.enable_multi_dispatch,
        )

    def properties(self) -> dict[str, str]:
        """Every setting by its broker.conf key, its value as broker.conf spells it (what
        GET_BROKER_CONFIG reports to `mqadmin getBrokerConfig`)."""
        return {java_key(f.name): _spell(getattr(self, f.name)) for f in dataclasses.fields(self)}

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(
        cls,
        path: Path | None = None,
        *,
        env: Mapping[str, str] | None = None,
        overrides: Iterable[tuple[str, Any]] = (),
    ) -> BrokerConfig:
        """Defaults, then the broker.conf at `path`, then `env` (os.environ when None), then
        `overrides` ((key, value) pairs; keys in either spelling, values strings or typed)."""
        values: dict[str, Any] = {}

        def take(key: str, value: Any, source: str) -> None:
            parsed = _parse_setting(key, value, source)
            if parsed is not None:
                values[parsed[0]] = parsed[1]

        if path is not None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
            try:
                entries = parse_properties(text)
            except ValueError as exc:
                raise ConfigError(f"{path}: {exc}") from None
            for lineno, key, value in entries:
                take(key, value, f"{path}:{lineno}")
        environ = os.environ if env is None else env
        if environ.get("NAMESRV_ADDR"):
            take("namesrvAddr", environ["NAMESRV_ADDR"], "$NAMESRV_ADDR")
        for name, value in sorted(environ.items()):
            if name.startswith(ENV_PREFIX) and name != "LONGBOAT_HOME":
                attr = name[len(ENV_PREFIX) :].lower()
                if attr in _FIELDS:
                    take(attr, value, f"${name}")
        for key, value in overrides:
            take(key, value, "the command line")
        return cls(**values)

    def updated(self, **values: Any) -> BrokerConfig:
        """A new config with some settings changed (keys in either spelling, values strings
        or typed), validated; this one is left as it is.  Raises ConfigError for an unknown
        key or a bad value."""
        changes: dict[str, Any] = {}
        for key, value in values.items():
            parsed = _parse_setting(key, value, "the caller")
            if parsed is None:
                raise ConfigError(f"unknown broker setting {key!r}")
            changes[parsed[0]] = parsed[1]
        return dataclasses.replace(self, **changes)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse combinations and ranges that cannot work, naming the key."""
        checks: list[tuple[str, bool, str]] = [
            ("listen_port", 0 <= self.listen_port <= 65535, "a port is 0..65535"),
            ("metrics_port", 0 <= self.metrics_port <= 65535, "a port is 0..65535 (0 = off)"),
            (
                "grpc_listen_port",
                -1 <= self.grpc_listen_port <= 65535,
                "a port is 0..65535 (0 = any free port, -1 = off)",
            ),
            (
                "grpc_min_invisible_time_mills",
                0 <= self.grpc_min_invisible_time_mills <= self.grpc_max_invisible_time_mills,
                "0 <= min <= grpcMaxInvisibleTimeMills",
            ),
            ("broker_id", self.broker_id >= 0, "broker ids are >= 0 (0 is the master)"),
            ("broker_role", self.broker_role in BROKER_ROLES, " / ".join(BROKER_ROLES)),
            (
                "broker_id",
                self.enable_controller_mode
                or (self.broker_id > 0) == (self.broker_role == "SLAVE"),
                "a SLAVE has a brokerId > 0, a master brokerId 0",
            ),
            (
                "controller_addr",
                not self.enable_controller_mode or bool(self.controller_addrs),
                "enableControllerMode=true needs the controllers' addresses",
            ),
            (
                "ha_listen_port",
                -1 <= self.ha_listen_port <= 65535,
                "a port is 0..65535 (0 = any free port, -1 = listenPort + 1)",
            ),
            ("ha_send_heartbeat_interval", self.ha_send_heartbeat_interval > 0, "must be > 0"),
            ("ha_slave_fallbehind_max", self.ha_slave_fallbehind_max > 0, "must be > 0"),
            (
                "access_message_in_memory_max_ratio",
                0 <= self.access_message_in_memory_max_ratio <= 100,
                "a percentage, 0..100",
            ),
            ("max_topic_queue_nums", 1 <= self.max_topic_queue_nums <= 65535, "1..65535"),
            (
                "default_topic_queue_nums",
                1 <= self.default_topic_queue_nums <= self.max_topic_queue_nums,
                "1..maxTopicQueueNums",
            ),
            ("short_polling_time_mills", self.short_polling_time_mills >= 0, "must be >= 0"),
            ("max_message_size", self.max_message_size > 0, "must be > 0"),
            ("mapped_file_size_commit_log", self.mapped_file_size_commit_log >= 4096, ">= 4096"),
            (
                "mapped_file_size_consume_queue",
                self.mapped_file_size_consume_queue >= CONSUME_QUEUE_ENTRY_SIZE,
                f">= {CONSUME_QUEUE_ENTRY_SIZE}",
            ),
            ("flush_interval_commit_log", self.flush_interval_commit_log > 0, "must be > 0"),
            ("sync_flush_timeout", self.sync_flush_timeout > 0, "must be > 0"),
            ("disk_max_used_space_ratio", 10 <= self.disk_max_used_space_ratio <= 95, "10..95"),
            ("register_name_server_period", self.register_name_server_period >= 100, ">= 100"),
            (
                "load_balance_poll_name_server_interval",
                self.load_balance_poll_name_server_interval >= 100,
                ">= 100",
            ),
            ("broker_permission", 0 <= self.broker_permission <= 15, "perm bits 0..15"),
            ("channel_expired_timeout", self.channel_expired_timeout > 0, "must be > 0"),
            ("max_connections", self.max_connections > 0, "must be > 0"),
            (
                "server_channel_max_idle_time_seconds",
                self.server_channel_max_idle_time_seconds > 0,
                "must be > 0",
            ),
            ("max_held_pull_requests", self.max_held_pull_requests > 0, "must be > 0"),
            ("max_pending_sync_flushes", self.max_pending_sync_flushes > 0, "must be > 0"),
            ("broker_name", bool(self.broker_name.strip()), "must not be empty"),
            ("broker_cluster_name", bool(self.broker_cluster_name.strip()), "not empty"),
        ]
        for attr, ok, rule in checks:
            if not ok:
                raise ConfigError(
                    f"{java_key(attr)} = {getattr(self, attr)!r} is not valid: {rule}"
                )
        if not (self.delete_when.isdigit() and 0 <= int(self.delete_when) <= 23):
            raise ConfigError(
                f"deleteWhen = {self.delete_when!r} is not valid: one hour of the day, 00..23"
            )
        try:
            DelayLevels.parse(self.message_delay_level)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if self.broker_ip1:
            try:
                host_bytes(self.broker_ip1)
            except ValueError as exc:
                raise ConfigError(f"brokerIP1 = {self.broker_ip1!r} is not valid: {exc}") from None
        try:
            TlsMode.parse(self.tls_server_mode)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        for addr in self.namesrv_addrs:
            host, _, port = addr.rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError(f"namesrvAddr: {addr!r} is not host:port")


# --------------------------------------------------------------------------- key spellings


def _percent(value: int, low: int, high: int) -> float:
    """A percent setting as the store's fraction, held within RocketMQ's bounds for it."""
    return min(max(value, low), high) / 100


def attribute_name(key: str) -> str:
    """`brokerIP1` → `broker_ip1`, `listen-port` → `listen_port`; snake_case passes through."""
    key = key.strip().replace("-", "_").replace(".", "_")
    if key.lower() in _FIELDS:
        return key.lower()
    return _CAMEL.sub("_", key).lower()


def java_key(attr: str) -> str:
    return _JAVA_KEYS.get(attr, attr)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _parse_setting(key: str, value: Any, source: str) -> tuple[str, Any] | None:
    """(attribute, typed value) for one setting in either spelling; None (and a warning) for
    an unknown key.  Raises ConfigError naming the key and `source` for a value that does
    not parse."""
    attr = attribute_name(key)
    spec = _FIELDS.get(attr)
    if spec is None:
        log.warning("ignoring unknown broker setting %r (from %s)", key, source)
        return None
    try:
        parsed = value if _is_typed(value, spec.type) else spec.parse(str(value).strip())
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"{java_key(attr)} = {value!r} (from {source}) is not valid: {exc}"
        ) from None
    return attr, parsed


def _spell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


@dataclass(frozen=True, slots=True)
class _Spec:
    type: type
    parse: Callable[[str], Any]


def _spec_for(tp: Any) -> _Spec:
    if tp in (bool, "bool"):
        return _Spec(bool, _parse_bool)
    if tp in (int, "int"):
        return _Spec(int, int)
    if tp in (float, "float"):
        return _Spec(float, float)
    if tp in (Path, "Path"):
        return _Spec(Path, lambda s: Path(s).expanduser())
    if tp in (FlushDiskType, "FlushDiskType"):
        return _Spec(FlushDiskType, lambda s: FlushDiskType(s.upper()))
    return _Spec(str, str)


def _is_typed(value: Any, tp: type) -> bool:
    if tp is bool:
        return isinstance(value, bool)
    if tp in (int, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, tp) and tp is not str


_FIELDS: dict[str, _Spec] = {f.name: _spec_for(f.type) for f in dataclasses.fields(BrokerConfig)}
# The broker.conf spelling of each attribute (RocketMQ's, including its `brokerIP1`).
_JAVA_KEYS: dict[str, str] = {
    name: re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name) for name in _FIELDS
}
_JAVA_KEYS["broker_ip1"] = "brokerIP1"
# RocketMQ's TLS keys are dotted (tls.server.keyPath, tls.server.need.client.auth).
_JAVA_KEYS.update(
    {
        "tls_server_mode": "tls.server.mode",
        "tls_server_cert_path": "tls.server.certPath",
        "tls_server_key_path": "tls.server.keyPath",
        "tls_server_key_password": "tls.server.keyPassword",
        "tls_server_need_client_auth": "tls.server.need.client.auth",
        "tls_server_trust_cert_path": "tls.server.trustCertPath",
        "tls_enable": "tls.enable",
    }
)


def host_address() -> str:
    """This host's first non-loopback IPv4 address (127.0.0.1 when it has none), found from
    the interface table: no DNS and no packets."""
    import psutil

    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family.name == "AF_INET" and not addr.address.startswith("127."):
                return addr.address
    return "127.0.0.1"
