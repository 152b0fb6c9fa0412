"""Server commands: `longboat up` (name server + broker in one process, or a local cluster of
broker groups with `--brokers N --slaves M`, each broker a `longboat broker` child process so
the groups take writes on all the host's cores), `longboat namesrv`, `longboat broker`.

Lifecycle of a server process (state as data):

    starting --(every server listening)--> serving --(SIGINT/SIGTERM)--> stopping --> exit 0
    starting --(bind, config or store error)--> exit 1, after stopping what had started

Servers start in order (the name server first: the broker registers with it on start; a
group's master before its slaves, which learn it from the name server) and stop in reverse:
the broker stops accepting, answers its held pulls, flushes, checkpoints and unregisters while
the name server is still up; then the name server closes.  A second signal while stopping is
ignored: the stop is bounded by the broker's own drain and unregister timeouts.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import click
from rich.table import Table

from longboat.broker import BrokerConfig, BrokerController
from longboat.broker.config import default_data_dir
from longboat.cli.broker_process import BrokerProcess
from longboat.cli.connect import client_config
from longboat.cli.controller_settings import (
    config_file_option,
    controller_config,
    controller_rows,
    read_properties,
)
from longboat.cli.options import bounded_option
from longboat.cli.runtime import (
    CliState,
    configure_logging,
    console,
    fail,
    run,
    stop_on_signal,
)
from longboat.controller.config import free_controller_ports
from longboat.controller.server import ControllerServer
from longboat.dashboard import DEFAULT_PORT as DASHBOARD_PORT
from longboat.namesrv import DEFAULT_PORT as NAMESRV_PORT
from longboat.namesrv import NameServer
from longboat.namesrv.server import IDLE_TIMEOUT_KEY, NAMESRV_LIMITS, namesrv_limits
from longboat.remoting.tls import ServerTls, TlsMode

if TYPE_CHECKING:
    from longboat.dashboard.server import DashboardServer

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
BROKER_PORT = 10911
# Broker groups of `longboat up --brokers`, named broker-a .. broker-z.
MAX_GROUPS = 26
# The port RocketMQ's Prometheus exporter uses.
METRICS_PORT = 5557
DASHBOARD_PORT_ENV = "LONGBOAT_DASHBOARD_PORT"
# `up` serves RocketMQ 5 clients where RocketMQ's proxy does; a lone `longboat broker` only
# when asked (grpcListenPort), as a RocketMQ broker serves no gRPC and a second broker on the
# same host must not collide with the first on it.
GRPC_PORT = 8081
GRPC_PORT_ENV = "LONGBOAT_GRPC_LISTEN_PORT"


class Server(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def serve(factories: Sequence[Callable[[], Server]], describe: Callable[[], Table]) -> None:
    """Build and start each server in order (a factory may read the ones started before it),
    print `describe()`, and on SIGINT/SIGTERM stop them in reverse order."""
    started: list[Server] = []
    with stop_on_signal() as stop:
        try:
            for factory in factories:
                server = factory()
                await server.start()
                started.append(server)
            # What start-up loaded (topic tables, routes, offsets: a million objects at
            # 100,000 topics) lives as long as the process: out of the collector's sight, so
            # a full collection does not walk it again and again under the sends.
            gc.collect()
            gc.freeze()
            console.print(describe())
            console.print("[dim]Ctrl-C stops[/]")
            await stop.wait()
            console.print("stopping: answering held pulls, flushing, unregistering")
        finally:
            for server in reversed(started):
                await server.stop()
    console.print("stopped")


def listening_table(
    namesrv: NameServer | None,
    broker: BrokerController | None,
    dashboard: DashboardServer | None = None,
    *,
    group_members: Sequence[BrokerProcess] = (),
) -> Table:
    """Called once every server is started: the ports shown are the bound ones.  A local
    cluster (`group_members`, each broker in its own process) gets one row per broker:
    name/id, address (as registered with `namesrv`), role, store, process id."""
    table = Table(title="longboat", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    if namesrv is not None:
        table.add_row("name server", namesrv.addr)
    registered = namesrv.routes.cluster_info().broker_addr_table if namesrv else {}
    for member in group_members:
        cfg = member.config
        known = registered.get(cfg.broker_name)
        addr = known.broker_addrs.get(cfg.broker_id, "?") if known else "?"
        pid = member.proc.pid if member.proc else "?"
        table.add_row(
            f"{cfg.broker_name}/{cfg.broker_id}",
            f"{addr} {cfg.broker_role}, store {cfg.store_path_root_dir}, pid {pid}",
        )
    if broker is not None:
        cfg = broker.config
        name = f"{cfg.broker_name} (cluster {cfg.broker_cluster_name})"
        table.add_row("broker", f"{name} {broker.broker_addr}")
        table.add_row("name servers", cfg.namesrv_addr or "none (not registered anywhere)")
        table.add_row("store", str(cfg.store_path_root_dir))
        metrics_port = getattr(cfg, "metrics_port", 0)
        if metrics_port:
            table.add_row("metrics", f"http://{broker.store_host}:{metrics_port}/metrics")
        grpc = getattr(broker, "grpc", None)
        if grpc is not None:
            table.add_row("grpc (RocketMQ 5)", f"{broker.store_host}:{grpc.port}")
    if dashboard is not None:
        table.add_row("dashboard", dashboard.url)
    return table


def server_logging() -> None:
    state = click.get_current_context().find_object(CliState)
    configure_logging(bool(state and state.verbose), level=logging.INFO)


@click.command()
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="Store directory [default: $LONGBOAT_HOME/store, else ~/.longboat/store].",
)
@click.option("--namesrv-port", default=NAMESRV_PORT, show_default=True, help="0: any free port.")
@click.option("--broker-port", default=BROKER_PORT, show_default=True, help="0: any free port.")
@click.option(
    "--metrics-port", default=METRICS_PORT, show_default=True, help="Prometheus; 0 turns it off."
)
@click.option(
    "--grpc-port",
    type=int,
    default=None,
    help="RocketMQ 5 clients (gRPC); 0: any free port, -1 turns it off "
    f"[default: ${GRPC_PORT_ENV}, else {GRPC_PORT} as RocketMQ's proxy].",
)
@click.option(
    "--dashboard-port",
    type=int,
    default=None,
    help="The web dashboard, on 127.0.0.1; 0: any free port, -1 turns it off "
    "[default: $LONGBOAT_DASHBOARD_PORT, else 8080].",
)
@bounded_option(
    "--brokers",
    default=1,
    low=1,
    high=MAX_GROUPS,
    help="Broker groups (broker-a, broker-b, ...), each broker a process of its own.",
)
@bounded_option(
    "--slaves",
    default=0,
    low=0,
    help="Slaves per broker group (brokerId 1, 2, ...), each replicating its master.",
)
@bounded_option(
    "--controllers",
    default=0,
    low=0,
    help="Controllers (RocketMQ 5's controller mode): the brokers of each group then elect "
    "their master, and a new one when it dies (allAckInSyncStateSet=true).",
)
@click.option(
    "--master-role",
    type=click.Choice(["ASYNC_MASTER", "SYNC_MASTER"]),
    default="ASYNC_MASTER",
    show_default=True,
    help="The masters' brokerRole when there are slaves.",
)
def up(
    data: Path | None,
    namesrv_port: int,
    broker_port: int,
    metrics_port: int,
    grpc_port: int | None,
    dashboard_port: int | None,
    brokers: int,
    slaves: int,
    controllers: int,
    master_role: str,
) -> None:
    """Run a name server and a broker in this process, on 127.0.0.1; with --brokers/--slaves,
    a local cluster: that many broker groups of a master and its slaves, each broker in a
    process of its own (one Python process takes writes on one core); with --controllers,
    controllers too (in this process), which elect each group's master (controller mode).

    Ctrl-C (or SIGTERM) stops all cleanly: held pulls are answered, the stores are flushed and
    the brokers unregister.  Other broker settings come from $LONGBOAT_<SETTING> variables.
    """
    server_logging()
    if grpc_port is None:
        grpc_port = int(os.environ.get(GRPC_PORT_ENV) or GRPC_PORT)
    if dashboard_port is None:
        dashboard_port = int(os.environ.get(DASHBOARD_PORT_ENV) or DASHBOARD_PORT)
    config = BrokerConfig.load(
        overrides=[
            ("listenHost", LOOPBACK),
            ("listenPort", broker_port),
            ("brokerIP1", LOOPBACK),
            ("storePathRootDir", data if data is not None else default_data_dir()),
            ("metricsPort", metrics_port),
            ("grpcListenPort", grpc_port),
        ]
    )
    refuse_ports_in_use(
        [
            (namesrv_port, "the name server", "--namesrv-port"),
            (broker_port, "the broker", "--broker-port"),
            (config.ha_port, "the broker's replication (HA: --broker-port + 1)", "--broker-port"),
            (metrics_port, "the metrics endpoint", "--metrics-port"),
            (grpc_port, "the gRPC endpoint", "--grpc-port"),
            (dashboard_port, "the dashboard", "--dashboard-port"),
        ]
    )
    namesrv = NameServer(LOOPBACK, namesrv_port)
    broker: list[BrokerController] = []
    children: list[BrokerProcess] = []
    configs = cluster_configs(config, brokers, slaves, master_role)
    elected = controller_servers(controllers, config.store_path_root_dir / "controller")
    if elected:
        addrs = ";".join(c.controller.config.self_addr for c in elected)
        configs = [
            member.updated(
                enableControllerMode=True, controllerAddr=addrs, allAckInSyncStateSet=True
            )
            for member in configs
        ]

    def broker_factory(member: BrokerConfig) -> Callable[[], Server]:
        def make_broker() -> Server:
            # After the name server started: its port is the bound one even when 0 was asked.
            named = member.updated(namesrv_addr=namesrv.addr)
            if len(configs) > 1:  # a local cluster: a process per broker, each on its core
                children.append(BrokerProcess(named, BrokerConfig.load()))
                return children[-1]
            broker.append(BrokerController(named))
            return broker[-1]

        return make_broker

    factories: list[Callable[[], Server]] = [lambda: namesrv]
    factories += [_started(c) for c in elected]
    factories += [broker_factory(member) for member in configs]
    dashboard: list[DashboardServer] = []
    if dashboard_port >= 0:

        def make_dashboard() -> DashboardServer:
            # Imported only when on: aiohttp is a third of the start-up time and memory.
            from longboat.dashboard.server import DashboardServer

            # Signed with `longboat --access-key/--secret-key` when given (brokers with ACL).
            dashboard.append(DashboardServer(client_config(namesrv.addr), LOOPBACK, dashboard_port))
            return dashboard[0]

        factories.append(make_dashboard)

    def describe() -> Table:
        board = dashboard[0] if dashboard else None
        if broker:
            table = listening_table(namesrv, broker[0], board)
        else:
            table = listening_table(namesrv, None, board, group_members=children)
        for server in elected:
            controller_rows(table, server)
        return table

    run(serve(factories, describe))


def controller_servers(count: int, store: Path) -> list[ControllerServer]:
    """`count` controllers on free 127.0.0.1 ports, replicating with each other, their Raft
    logs under `store` (so a restarted `up` finds the brokers' ids again)."""
    if count <= 0:
        return []
    ports = free_controller_ports(count, LOOPBACK)
    peers = ";".join(f"n{i}-{LOOPBACK}:{p}" for i, p in enumerate(ports))
    return [
        ControllerServer(
            controller_config(
                {
                    "controllerDLegerPeers": peers,
                    "controllerDLegerSelfId": f"n{i}",
                    "controllerStorePath": str(store / f"n{i}"),
                }
            )
        )
        for i in range(count)
    ]


def _started(server: ControllerServer) -> Callable[[], Server]:
    return lambda: server


_PORT_CHOICES = {
    "--namesrv-port": "0: any free port",
    "--broker-port": "0: any free port",
    "--metrics-port": "0: none",
    "--grpc-port": "0: any free port, -1: none",
    "--dashboard-port": "0: any free port, -1: none",
}


def refuse_ports_in_use(ports: Sequence[tuple[int, str, str]]) -> None:
    """Fail, naming the option to change, when a fixed port (port, what, option) is taken
    (another `longboat up`, a RocketMQ): before anything starts, so the error is one line and
    not the bind error of whichever library got there first (gRPC prints its own).  A port
    taken between this check and the bind still fails the start, less helpfully."""
    for port, what, option in ports:
        if port <= 0:
            continue
        with socket.socket() as probe:
            # As the servers bind: a port left in TIME_WAIT by a stopped server is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((LOOPBACK, port))
            except OSError as exc:
                fail(
                    f"port {port} for {what} is not free on {LOOPBACK} ({exc.strerror}): "
                    f"change {option} ({_PORT_CHOICES[option]})",
                    "system",
                )


def cluster_configs(
    base: BrokerConfig, groups: int, slaves: int, master_role: str
) -> list[BrokerConfig]:
    """The brokers of a local cluster, masters first: `groups` broker groups (broker-a, ...)
    of a master and `slaves` slaves each.  The first master keeps `base`'s ports (remoting,
    metrics, gRPC); every other broker takes free ones, with no metrics or gRPC endpoint.
    Each broker has its own store under `base`'s: <store>/<broker name>/<broker id>.  One
    broker without slaves is `base` itself."""
    if groups == 1 and slaves == 0:
        return [base]
    root = base.store_path_root_dir
    masters: list[BrokerConfig] = []
    followers: list[BrokerConfig] = []
    for g in range(groups):
        name = f"broker-{chr(ord('a') + g)}"
        for broker_id in range(slaves + 1):
            first = g == 0 and broker_id == 0
            member = base.updated(
                brokerName=name,
                brokerId=broker_id,
                brokerRole=master_role if broker_id == 0 else "SLAVE",
                listenPort=base.listen_port if first else 0,
                metricsPort=base.metrics_port if first else 0,
                grpcListenPort=base.grpc_listen_port if first else -1,
                storePathRootDir=root / name / str(broker_id),
            )
            (masters if broker_id == 0 else followers).append(member)
    return masters + followers


@click.command()
@click.option(
    "--host",
    default=LOOPBACK,
    show_default=True,
    help="Address to listen on (0.0.0.0: every interface).",
)
@click.option("--port", default=NAMESRV_PORT, show_default=True, help="0: any free port.")
@click.option(
    "--max-connections",
    default=NAMESRV_LIMITS.max_connections,
    show_default=True,
    help="Connections served at once; over it, requests are answered SYSTEM_BUSY.",
)
@click.option(
    "--idle-timeout",
    type=float,
    help="Seconds without traffic after which a connection is closed (default: namesrv.conf's "
    f"{IDLE_TIMEOUT_KEY}, else {NAMESRV_LIMITS.idle_timeout_s:.0f}).",
)
@click.option(
    "--acl-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A plain_acl.yml: route-changing commands then need a signed admin request.",
)
@click.option(
    "--tls-mode",
    type=click.Choice([m.value for m in TlsMode]),
    default=TlsMode.DISABLED.value,
    show_default=True,
    help="tls.server.mode: permissive serves TLS and plain clients on one port.",
)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="PEM certificate.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="PEM private key.")
@config_file_option(
    "A RocketMQ namesrv.conf; with enableControllerInNamesrv=true a controller runs in "
    "this process too (its controllerDLeger* keys as `longboat controller` reads them)."
)
def namesrv(
    host: str,
    port: int,
    max_connections: int,
    idle_timeout: float | None,
    acl_file: Path | None,
    tls_mode: str,
    tls_cert: str | None,
    tls_key: str | None,
    config_path: Path | None,
) -> None:
    """Run a name server alone (brokers register here; clients look up routes here)."""

    server_logging()
    props = read_properties(config_path)
    try:
        limits = dataclasses.replace(namesrv_limits(props), max_connections=max_connections)
    except ValueError as exc:
        fail(f"{config_path}: {exc}")
    if idle_timeout is not None:
        limits = dataclasses.replace(limits, idle_timeout_s=idle_timeout)
    tls = ServerTls(TlsMode.parse(tls_mode), tls_cert or "", tls_key or "")
    server = NameServer(host, port, limits=limits, acl_file=acl_file, tls=tls)
    factories: list[Callable[[], Server]] = [lambda: server]
    embedded: list[ControllerServer] = []
    if props.get("enableControllerInNamesrv", "").strip().lower() == "true":
        embedded.append(ControllerServer(controller_config(props)))
        factories.append(lambda: embedded[0])

    def describe() -> Table:
        table = listening_table(server, None)
        for controller in embedded:
            controller_rows(table, controller)
        return table

    run(serve(factories, describe))


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A RocketMQ-style broker.conf (Java properties).",
)
@click.pass_context
def broker(ctx: click.Context, config_path: Path | None) -> None:
    """Run a broker alone: settings from broker.conf, then $LONGBOAT_<SETTING> (and
    $NAMESRV_ADDR), then `--key value` options (any broker.conf key, e.g. --listenPort 10911
    --namesrvAddr 127.0.0.1:9876)."""
    server_logging()
    config = BrokerConfig.load(config_path, overrides=key_value_pairs(ctx.args))
    controller = BrokerController(config)
    run(serve([lambda: controller], lambda: listening_table(None, controller)))


def key_value_pairs(args: Sequence[str]) -> list[tuple[str, str]]:
    """`--key value` and `--key=value` pairs, in order; anything else is a usage error."""
    pairs: list[tuple[str, str]] = []
    items = iter(args)
    for item in items:
        if not item.startswith("--") or item == "--":
            fail(f"unexpected argument {item!r}: broker settings are given as --key value")
        key, eq, value = item[2:].partition("=")
        if not eq:
            following = next(items, None)
            if following is None:
                fail(f"--{key} needs a value")
            value = str(following)
        pairs.append((key, value))
    return pairs


COMMANDS = (up, namesrv, broker)
