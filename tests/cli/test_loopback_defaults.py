"""Loopback unless told otherwise, for every server a user starts without an address: the name
server (`longboat namesrv`), a broker with its metrics, gRPC and HA endpoints (`longboat broker`),
and the dashboard (`longboat dashboard`), each a real process whose listening sockets are read
from the operating system."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import psutil

from broker.test_hostile_input_wire import is_loopback
from cli.processes import READY_LINE, ServerProcess


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(proc: ServerProcess) -> dict[int, str]:
    """Port → address of every TCP socket the process listens on."""
    conns = psutil.Process(proc.proc.pid).net_connections("tcp")
    return {c.laddr.port: c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN}


def test_name_server_broker_metrics_and_dashboard_listen_on_loopback_by_default(
    tmp_path: Path,
) -> None:
    started: list[ServerProcess] = []

    def start(*args: str) -> tuple[ServerProcess, str]:
        proc = ServerProcess(args, tmp_path / "home")
        started.append(proc)
        return proc, proc.wait_for(READY_LINE)

    try:
        namesrv, printed = start("namesrv", "--port", "0")
        served = re.search(r"127\.0\.0\.1:(\d+)", printed)
        assert served, printed
        metrics_port = free_port()
        broker, _ = start(
            "broker", "--listenPort", "0", "--grpcListenPort", "0",
            "--metricsPort", str(metrics_port),
            "--namesrvAddr", f"127.0.0.1:{served.group(1)}",
            "--storePathRootDir", str(tmp_path / "store"),
        )  # fmt: skip
        dashboard, _ = start(
            "dashboard", "--port", "0", "--namesrv", f"127.0.0.1:{served.group(1)}"
        )
        for proc, at_least in ((namesrv, 1), (broker, 4), (dashboard, 1)):
            sockets = listening(proc)
            # Something is listening (remoting, HA, gRPC and metrics for the broker) ...
            assert len(sockets) >= at_least, (proc.args, sockets)
            # ... and only on loopback.
            assert all(is_loopback(ip) for ip in sockets.values()), sockets
        assert metrics_port in listening(broker)
    finally:
        for proc in started:
            proc.kill()
