"""Apache RocketMQ 5.3.3 in the test suite: its name server, and its proxy in local mode.

In local mode (``ProxyStartup -pm local``) the proxy runs the broker inside its own JVM, so a
whole 5.x cluster is two JVMs: the name server, and the proxy hosting the broker. Clients reach
it three ways, all on random loopback ports:

* remoting to the broker itself, through the name server's routes (``namesrv_addr``): what
  Longboat's client and the 4.x Java client do;
* remoting to the proxy (``proxy_remoting_addr``): the 5.x proxy's remoting protocol server;
* gRPC to the proxy (``grpc_endpoint``): RocketMQ's 5.x clients.

The broker is configured as the 4.9.7 one is (`peers.rocketmq.broker_settings`), plus small
timer-wheel files and light message queues. The session fixture ``rocketmq5_cluster``
(tests/conftest.py) starts one; ``python -m peers.rocketmq5`` (``make rocketmq5-up``) starts
one by hand. Every JVM runs under `peers.lifeline`, so it dies with the process that started
it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longboat.client import ClientConfig
from longboat.client.sync import Admin
from peers.process import run_guarded, run_peer
from peers.rocketmq import (
    CLIENT_DIR,
    JAVA_DIR,
    JDK17_OPENS,
    LMQ_SETTINGS,
    PEER_JVM_OPTIONS,
    START_TIMEOUT_S,
    RocketMQCluster,
    RocketMQProcess,
    broker_port,
    broker_settings,
    classpath,
    free_port,
    peer_args,
    peer_command,
    properties_text,
    serve_until_interrupted,
    spawn_server,
    start_namesrv,
    start_rocketmq,
)

SERVER5_DIR = JAVA_DIR / "server5"
POP_PROGRAM = JAVA_DIR / "pop" / "PopConsume.java"
VERSION = "5.3.3"
# One JVM holds the proxy and the broker: a heap as small as the 4.9.7 broker's, and direct
# memory capped at 1 GiB (RocketMQ's own scripts give 15 GiB): at 256 MiB, a session's
# scenarios (bodies over 4 MiB among them) left its gRPC and remoting servers unable to
# reserve buffers ("Cannot reserve 4259840 bytes of direct buffer memory") for the rest of it.
BROKER_JVM_OPTIONS = (
    "-Xms256m",
    "-Xmx512m",
    "-XX:MaxDirectMemorySize=1g",
    "-XX:+UseG1GC",
)

# A cluster-mode proxy holds no store: a small heap.
CLUSTER_PROXY_JVM_OPTIONS = ("-Xms128m", "-Xmx256m", "-XX:+UseSerialGC")

# What a 5.x broker needs beyond `broker_settings`.
BROKER5_SETTINGS: dict[str, object] = {
    # Recall (RECALL_MESSAGE, gRPC RecallMessage) is off by default in 5.3 ("recall failed,
    # operation is forbidden", NO_PERMISSION); Longboat's broker always serves it.
    "recallMessageEnable": "true",
    # The timer wheel (arbitrary delays) preallocates a 100 MiB log by default.
    "mappedFileSizeTimerLog": 4 * 1024 * 1024,
    # 5.x writes transaction decisions in batches, every 3 s by default: with halves checked
    # after 1 s (broker_settings), a half already committed would be checked back, and
    # committed a second time when the check says commit.
    "transactionOpBatchInterval": 100,
}


@dataclass
class RocketMQ5Cluster:
    """An Apache RocketMQ 5 name server and a proxy in local mode (with its broker)."""

    home: Path
    namesrv_addr: str
    broker_addr: str
    broker_name: str
    cluster_name: str
    proxy_remoting_addr: str
    grpc_endpoint: str
    version: str = VERSION
    processes: list[RocketMQProcess] = field(default_factory=list)

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


# Either Apache RocketMQ the suite runs (the `any_rocketmq` fixture): what a test may use of both.
AnyRocketMQ = RocketMQCluster | RocketMQ5Cluster


def wait_registered(namesrv_addr: str, broker_name: str) -> None:
    """Return once the name server lists `broker_name` as a master."""
    config = ClientConfig([namesrv_addr], client_ip="127.0.0.1")
    deadline = time.monotonic() + START_TIMEOUT_S
    with Admin(config=config) as admin:
        while broker_name not in admin.master_brokers():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{broker_name} never registered with {namesrv_addr}")
            time.sleep(0.1)


def write_proxy_conf(
    home: Path, cluster_name: str, namesrv_addr: str, grpc_port: int, remoting_port: int
) -> Path:
    """The proxy's rmq-proxy.json under ``home``; its path."""
    conf = home / "conf" / "rmq-proxy.json"
    conf.write_text(
        json.dumps(
            {
                "rocketMQClusterName": cluster_name,
                "namesrvAddr": namesrv_addr,
                "grpcServerPort": grpc_port,
                "remotingListenPort": remoting_port,
                # The address a cluster-mode proxy gives remoting clients in its routes (by
                # default the host's first address, not loopback).
                "remotingAccessAddr": "127.0.0.1",
                # SimpleConsumers in tests hide a message for 1-2 s (the default floor: 10 s).
                "minInvisibleTimeMillsForRecv": 1000,
            }
        )
    )
    return conf


def spawn_proxy(home: Path, args: tuple[str, ...], jvm_options: tuple[str, ...]) -> RocketMQProcess:
    """Start ``ProxyStartup`` with ``args``; return once it serves (both its servers listen,
    and in local mode its broker started)."""
    proxy = spawn_server(
        "proxy", home, SERVER5_DIR, "org.apache.rocketmq.proxy.ProxyStartup", args, jvm_options
    )
    proxy.wait_started("rocketmq-proxy startup successfully", START_TIMEOUT_S)
    return proxy


def start_cluster_proxy(home: Path, cluster: RocketMQ5Cluster) -> tuple[RocketMQProcess, str]:
    """Start a second proxy for ``cluster``, in cluster mode (``-pm cluster``: a JVM of its own
    that reaches the broker through the name server, as RocketMQ 5 is deployed with separate
    proxies); return it and its remoting address."""
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    remoting_port = free_port()
    conf = write_proxy_conf(
        home, cluster.cluster_name, cluster.namesrv_addr, free_port(), remoting_port
    )
    proxy = spawn_proxy(home, ("-pm", "cluster", "-pc", str(conf)), CLUSTER_PROXY_JVM_OPTIONS)
    return proxy, f"127.0.0.1:{remoting_port}"


def start_rocketmq5(
    home: Path,
    *,
    namesrv_port: int = 0,
    broker_port_number: int = 0,
    grpc_port: int = 0,
    remoting_port: int = 0,
    broker_options: Mapping[str, object] | None = None,
    broker_jvm_options: tuple[str, ...] = BROKER_JVM_OPTIONS,
) -> RocketMQ5Cluster:
    """Start a 5.x name server and a local-mode proxy with its broker, all under ``home``, on
    the ports given (random free loopback ports for those left 0).  ``broker_options`` are
    broker.conf entries over the suite's; ``broker_jvm_options`` the proxy-and-broker JVM's
    heap and GC (a benchmark gives it the heap RocketMQ's users run), as for 4.9.7's
    `peers.rocketmq.start_rocketmq`, so a benchmark starts either release the same way."""
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    namesrv, namesrv_addr = start_namesrv(home, SERVER5_DIR, namesrv_port)
    broker = broker_settings(home, namesrv_addr, broker_port_number or broker_port())
    broker.update(
        {
            "brokerClusterName": "RocketMQ5Cluster",
            "brokerName": "rocketmq5-broker-a",
            **BROKER5_SETTINGS,
            **LMQ_SETTINGS,
            **(broker_options or {}),
        }
    )
    broker_conf = home / "conf" / "broker.conf"
    broker_conf.write_text(properties_text(broker))
    grpc_port, remoting_port = grpc_port or free_port(), remoting_port or free_port()
    proxy_conf = write_proxy_conf(
        home, str(broker["brokerClusterName"]), namesrv_addr, grpc_port, remoting_port
    )
    cluster = RocketMQ5Cluster(
        home,
        namesrv_addr,
        f"127.0.0.1:{broker['listenPort']}",
        str(broker["brokerName"]),
        str(broker["brokerClusterName"]),
        f"127.0.0.1:{remoting_port}",
        f"127.0.0.1:{grpc_port}",
        processes=[namesrv],
    )
    try:
        proxy = spawn_proxy(
            home,
            ("-pm", "local", "-pc", str(proxy_conf), "-bc", str(broker_conf)),
            broker_jvm_options,
        )
        cluster.processes.append(proxy)
        # The broker's registration with the name server may still be on its way.
        wait_registered(namesrv_addr, cluster.broker_name)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def start_rocketmq5_broker(
    home: Path, *, namesrv_addr: str, broker_options: Mapping[str, object] | None = None
) -> RocketMQCluster:
    """Start a 5.x broker alone (``BrokerStartup``, no proxy) registering with ``namesrv_addr``
    (RocketMQ's or Longboat's name servers): one broker of a mixed cluster or of an HA pair."""
    cluster = start_rocketmq(
        home,
        namesrv_addr=namesrv_addr,
        # A 5.x slave serves pulls only when told to (4.x's always does).
        broker_options={**BROKER5_SETTINGS, "slaveReadEnable": "true", **(broker_options or {})},
        module_dir=SERVER5_DIR,
    )
    cluster.version = VERSION
    # 5.x prints its "boot success" before its first registration has reached the name servers.
    log = home / "logs" / "rocketmqlogs" / "broker.log"
    deadline = time.monotonic() + START_TIMEOUT_S
    for addr in namesrv_addr.split(";"):
        while f"name server completed. TargetHost={addr}" not in log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                cluster.stop()
                raise RuntimeError(f"the 5.x broker never registered with {addr}; see {log}")
            time.sleep(0.2)
    return cluster


def run_java53_peer(program: str, *, timeout: float, **options: object) -> list[dict[str, Any]]:
    """Run a peer program (`peers.rocketmq.run_java_peer`) on rocketmq-client 5.3.3: its one
    build, on the 5.x server's classpath, which holds the 5.3.3 client and tools."""
    args = peer_args(options)
    command = peer_command(program, args, client_jars=SERVER5_DIR)
    name = f"java peer {program} on {VERSION} {' '.join(args)}"
    return run_peer(name, command, CLIENT_DIR, timeout=timeout)


def run_mqadmin5(*, timeout: float, **options: object) -> list[dict[str, Any]]:
    """Run the ``MqAdmin`` peer program on rocketmq-tools 5.3.3: `mqadmin` 5.3.3, unchanged
    (the program only calls ``MQAdminStartup.main0``, the same in 5.x)."""
    return run_java53_peer("MqAdmin", timeout=timeout, **options)


def run_pop_consume(
    namesrv_addr: str, group: str, topic: str, count: int, *, log_root: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run RocketMQ's remoting client 5.3.3 as a pop-mode push consumer (`POP_PROGRAM`, in
    source mode on the 5.x server's classpath, which holds rocketmq-client 5.3.3) until it
    consumed `count` distinct bodies: its output is a line "GOT <body> <reconsumeTimes> <pop|pull>"
    per message (pop: it came with a POP_CK checkpoint), then "DONE" (exit 0) or "TIMEOUT
    <distinct bodies>" (exit 1).  It pops only where the group's mode was set to POP first."""
    command = [
        "java",
        *PEER_JVM_OPTIONS,
        f"-Drocketmq.client.logRoot={log_root}",
        *JDK17_OPENS,
        "-cp",
        classpath(SERVER5_DIR),
        str(POP_PROGRAM),
        namesrv_addr,
        group,
        topic,
        str(count),
    ]
    return run_guarded(command, POP_PROGRAM.parent, timeout=timeout)


def main() -> None:
    """Start a RocketMQ 5 cluster by hand (``make rocketmq5-up``) and keep it until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m peers.rocketmq5", description=main.__doc__)
    for server in ("namesrv", "broker", "grpc", "remoting"):
        parser.add_argument(f"--{server}-port", type=int, default=0, help="default: a free port")
    parser.add_argument("--home", type=Path, help="ROCKETMQ_HOME and store (default: a temp dir)")
    options = parser.parse_args()
    home = options.home or Path(tempfile.mkdtemp(prefix="rocketmq5-"))
    cluster = start_rocketmq5(
        home,
        namesrv_port=options.namesrv_port,
        broker_port_number=options.broker_port,
        grpc_port=options.grpc_port,
        remoting_port=options.remoting_port,
    )
    print(
        f"Apache RocketMQ {VERSION}: name server {cluster.namesrv_addr}, broker "
        f"{cluster.broker_addr}, proxy remoting {cluster.proxy_remoting_addr}, "
        f"proxy gRPC {cluster.grpc_endpoint}",
        flush=True,
    )
    serve_until_interrupted(cluster, home)


if __name__ == "__main__":
    main()
