"""`longboat up` / `namesrv` / `broker` as real processes: serve, stop on a signal, keep data."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longboat.cli.demo import longboat_up
from longboat.client import ClientConfig, Message
from longboat.client.consume_from import ConsumeFrom
from longboat.client.sync import Admin, LitePullConsumer, Producer

from .processes import ServerProcess, cli_env

TOPIC = "CliUpTopic"


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for proc in started:
        proc.kill()


def start(servers: list[ServerProcess], home: Path, *args: str) -> ServerProcess:
    proc = ServerProcess(args, home)
    servers.append(proc)
    proc.wait_for("Ctrl-C stops")
    return proc


def up_args(data: Path) -> list[str]:
    return [
        "up",
        "--data",
        str(data),
        "--namesrv-port",
        "0",
        "--broker-port",
        "0",
        "--metrics-port",
        "0",
        "--grpc-port",
        "0",
    ]


def consume_all(namesrv: str, group: str, expected: int) -> list[bytes]:
    config = ClientConfig([namesrv], client_ip="127.0.0.1")
    bodies: list[bytes] = []
    with LitePullConsumer(
        group, config=config, consume_from=ConsumeFrom.FIRST_OFFSET, auto_commit=False
    ) as consumer:
        consumer.subscribe(TOPIC)
        for _ in range(60):
            bodies += [m.body for m in consumer.poll(1.0)]
            if len(bodies) >= expected:
                break
        consumer.commit()
    return bodies


def test_up_serves_stops_on_sigint_and_keeps_data(servers, tmp_path: Path) -> None:
    data = tmp_path / "store"
    up = start(servers, tmp_path, *up_args(data))
    namesrv = up.address_of("name server")
    config = ClientConfig([namesrv], client_ip="127.0.0.1")
    sent = [f"m{i}".encode() for i in range(10)]
    with Producer("cli-test", config=config) as producer:
        for body in sent:
            assert producer.send(Message(TOPIC, body)).ok
    assert sorted(consume_all(namesrv, "cli-g1", len(sent))) == sorted(sent)
    # The dashboard is on by default (the suite's $LONGBOAT_DASHBOARD_PORT=0: a free port).
    printed = re.search(r"dashboard\W+http://(127\.0\.0\.1:\d+)/", up.output)
    assert printed, up.output
    dashboard = printed.group(1)
    with urllib.request.urlopen(f"http://{dashboard}/api/topics", timeout=30) as answer:
        assert TOPIC in [t["name"] for t in json.load(answer)["topics"]]

    assert up.interrupt(signal.SIGINT) == 0
    assert "stopped" in up.output
    # Its output is a pipe here, as under a service manager or in a container: log records are
    # plain lines, not padded to the unbounded width tables get there.
    logged = [line for line in up.output.splitlines() if " INFO longboat." in line]
    assert any(re.fullmatch(r"\S+ \S+ INFO longboat\.\S+: .*listening on .*", x) for x in logged)
    assert max(map(len, up.output.splitlines())) < 1_000

    again = start(servers, tmp_path, *up_args(data), "--dashboard-port", "-1")
    namesrv = again.address_of("name server")
    assert "dashboard" not in again.output
    assert sorted(consume_all(namesrv, "cli-g2", len(sent))) == sorted(sent)
    # The first group's committed offsets survived: nothing is left for it.
    with Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin:
        progress = admin.group_progress("cli-g1", TOPIC)
    assert sum(p.consumer_offset or 0 for p in progress) == len(sent)
    assert again.interrupt(signal.SIGTERM) == 0


def test_namesrv_and_broker_processes_with_broker_conf(servers, tmp_path: Path) -> None:
    namesrv_proc = start(servers, tmp_path, "namesrv", "--host", "127.0.0.1", "--port", "0")
    namesrv = namesrv_proc.address_of("name server")
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClusterName = CliCluster\n"
        "brokerName = broker-conf\n"
        f"storePathRootDir = {tmp_path / 'broker-store'}\n"
        "listenPort = 0\n"
        "grpcListenPort = 0\n"
        "someRocketMqOnlyKey = ignored\n"
    )
    broker_proc = start(
        servers,
        tmp_path,
        "broker",
        "-c",
        str(conf),
        "--listenHost",
        "127.0.0.1",
        "--brokerIP1=127.0.0.1",
        "--namesrvAddr",
        namesrv,
        "--metricsPort",
        "0",
    )
    assert "broker-conf (cluster CliCluster)" in broker_proc.output
    assert "someRocketMqOnlyKey" in broker_proc.output  # warned about, not fatal
    config = ClientConfig([namesrv], client_ip="127.0.0.1")
    with Producer("cli-test", config=config) as producer:
        assert producer.send(Message(TOPIC, b"via broker.conf")).ok
    assert consume_all(namesrv, "cli-g3", 1) == [b"via broker.conf"]
    assert broker_proc.interrupt() == 0
    assert namesrv_proc.interrupt() == 0


def test_two_brokers_from_rocketmq_broker_confs_start_side_by_side(servers, tmp_path: Path) -> None:
    # Plain RocketMQ broker.conf files: no gRPC key, so no gRPC endpoint (RocketMQ's brokers
    # serve none; its proxy does), and the second does not collide with the first on 8081.
    namesrv = start(servers, tmp_path, "namesrv", "--port", "0").address_of("name server")
    for name in ("broker-one", "broker-two"):
        conf = tmp_path / f"{name}.conf"
        conf.write_text(
            f"brokerClusterName = DefaultCluster\nbrokerName = {name}\nbrokerId = 0\n"
            f"storePathRootDir = {tmp_path / name}\nlistenPort = 0\nbrokerRole = ASYNC_MASTER\n"
            f"namesrvAddr = {namesrv}\nbrokerIP1 = 127.0.0.1\n"
        )
        proc = ServerProcess(
            ["broker", "-c", str(conf), "--listenHost", "127.0.0.1"],
            tmp_path,
            unset_env=["LONGBOAT_GRPC_LISTEN_PORT"],
        )
        servers.append(proc)
        assert "grpc" not in proc.wait_for("Ctrl-C stops")
    with Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin:
        deadline = time.monotonic() + 30
        while sorted(admin.master_brokers()) != ["broker-one", "broker-two"]:
            assert time.monotonic() < deadline, admin.master_brokers()
            time.sleep(0.1)


@pytest.mark.parametrize(
    ("option", "what", "choices"),
    [
        ("--namesrv-port", "the name server", "0: any free port"),
        ("--broker-port", "the broker", "0: any free port"),
        ("--grpc-port", "the gRPC endpoint", "0: any free port, -1: none"),
        ("--dashboard-port", "the dashboard", "0: any free port, -1: none"),
    ],
)
def test_a_port_taken_in_up_names_the_option(
    tmp_path: Path, option: str, what: str, choices: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [a for a in up_args(tmp_path / "store") if a != "--dashboard-port"]
        at = args.index(option) + 1 if option in args else None
        if at is None:
            args += [option, str(port)]
        else:
            args[at] = str(port)
        proc = ServerProcess(args, tmp_path)
        assert proc.proc.wait(60) == 1
        proc.kill()
    lines = [line for line in proc.output.splitlines() if line.strip()]
    assert lines == [
        f"error (system): port {port} for {what} is not free on 127.0.0.1 (Address already in "
        f"use): change {option} ({choices})"
    ]


def test_the_demo_starts_its_servers_beside_a_running_up(tmp_path: Path, monkeypatch) -> None:
    # As if `make up` held the ports a plain `longboat up` takes for what the demo does not
    # use: the demo's own starts anyway (free ports, or none).
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        held = str(taken.getsockname()[1])
        for env in (
            "LONGBOAT_DASHBOARD_PORT",
            "LONGBOAT_GRPC_LISTEN_PORT",
            "LONGBOAT_METRICS_PORT",
        ):
            monkeypatch.setenv(env, held)
        monkeypatch.setenv("LONGBOAT_HOME", str(tmp_path))
        monkeypatch.setenv("LONGBOAT_MAPPED_FILE_SIZE_COMMIT_LOG", str(16 * 1024 * 1024))
        with (
            longboat_up(tmp_path / "store") as namesrv,
            Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin,
        ):
            assert admin.master_brokers()


def test_a_bad_setting_is_one_line_and_exit_1(tmp_path: Path) -> None:
    proc = ServerProcess(["broker", "--listenPort", "not-a-port"], tmp_path)
    assert proc.proc.wait(60) == 1
    proc.kill()
    lines = [line for line in proc.output.splitlines() if line.strip()]
    assert lines == [
        "error (config): listenPort = 'not-a-port' (from the command line) is not valid: "
        "invalid literal for int() with base 10: 'not-a-port'"
    ]


def test_up_runs_a_local_cluster_of_masters_and_slaves(servers, tmp_path: Path) -> None:
    """`up --brokers 2 --slaves 1`: two broker groups of a master and a slave, each with its
    own store; `cluster` shows ids, roles and the slaves' lag in bytes and in seconds, which
    replication brings to 0."""
    data = tmp_path / "store"
    up = start(servers, tmp_path, *up_args(data), "--brokers", "2", "--slaves", "1")
    namesrv = up.address_of("name server")
    addrs = {label: up.address_of(label) for label in ("broker-a/0", "broker-a/1", "broker-b/0")}
    assert (data / "broker-b" / "1").is_dir()
    config = ClientConfig([namesrv], client_ip="127.0.0.1")
    with Producer("cli-test", config=config) as producer:
        results = [producer.send(Message(TOPIC, f"m{i}".encode())) for i in range(20)]
    # Producers send to masters only.
    assert {r.message_queue.broker_name for r in results} <= {"broker-a", "broker-b"}

    def cluster(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "longboat.cli", "cluster", "--namesrv", namesrv, *args],
            capture_output=True,
            text=True,
            env=cli_env(tmp_path),
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def cluster_json() -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = json.loads(cluster("--format", "json"))
        return rows

    deadline = time.monotonic() + 30
    while True:
        rows = cluster_json()
        members = {(r["broker"], r["id"]): r for r in rows}
        if all(members[(b, 1)]["lag"] == 0 for b in ("broker-a", "broker-b")):
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.5)
    assert sorted(members) == [("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
    assert [members[k]["role"] for k in sorted(members)] == ["master", "slave"] * 2
    assert members[("broker-a", 0)]["lag"] is None
    # In seconds, from the masters' commit-log ends sampled over --lag-window: a slave that
    # holds all its master holds is 0 s behind; a master has no lag.
    for broker in ("broker-a", "broker-b"):
        assert members[(broker, 1)]["behindSeconds"] == 0.0
        assert members[(broker, 1)]["behindSecondsAtLeast"] is False
        assert members[(broker, 0)]["behindSeconds"] is None
    lines = cluster("--lag-window", "0.3").splitlines()
    assert any("lag (bytes)" in line and "lag (time)" in line for line in lines)
    (slave_row,) = [line for line in lines if addrs["broker-a/1"] in line]
    cells = [c.strip() for c in slave_row.strip().strip("│").split("│")]
    assert (cells[3], cells[-2:]) == ("slave", ["0", "0.0s"]), slave_row
    assert members[("broker-a", 0)]["addr"] == addrs["broker-a/0"]
    assert members[("broker-a", 1)]["addr"] == addrs["broker-a/1"]
    assert up.interrupt(signal.SIGINT) == 0


def test_up_runs_each_broker_group_in_a_process_of_its_own(servers, tmp_path: Path) -> None:
    """`up --brokers 2`: broker-a and broker-b each serve from their own process and store
    (so both take writes, each on its core); a topic is served by both, every message sent
    comes back, and SIGTERM to `up` stops both processes cleanly."""
    data = tmp_path / "store"
    up = start(servers, tmp_path, *up_args(data), "--brokers", "2")
    namesrv = up.address_of("name server")
    pids = {
        name: int(m.group(1))
        for name in ("broker-a/0", "broker-b/0")
        if (m := re.search(rf"{name}\W.*pid (\d+)", up.output))
    }
    assert len(set(pids.values())) == 2 and up.proc.pid not in pids.values(), up.output
    assert (data / "broker-a" / "0").is_dir() and (data / "broker-b" / "0").is_dir()
    config = ClientConfig([namesrv], client_ip="127.0.0.1")
    sent = [f"m{i}".encode() for i in range(40)]
    with Producer("cli-test", config=config) as producer:
        results = [producer.send(Message(TOPIC, body)) for body in sent]
    assert {r.message_queue.broker_name for r in results} == {"broker-a", "broker-b"}
    assert sorted(consume_all(namesrv, "cli-procs", len(sent))) == sorted(sent)
    assert up.interrupt(signal.SIGTERM) == 0
    for pid in pids.values():
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # exited and reaped by `up`


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_up_takes_its_broker_processes_with_it(servers, tmp_path: Path) -> None:
    up = start(servers, tmp_path, *up_args(tmp_path / "store"), "--brokers", "2")
    pids = [int(p) for p in re.findall(r"pid (\d+)", up.output)]
    assert len(pids) == 2 and all(running(pid) for pid in pids), up.output
    up.kill()  # SIGKILL: `up` stops nothing itself
    deadline = time.monotonic() + 60
    while any(running(pid) for pid in pids):
        assert time.monotonic() < deadline, [pid for pid in pids if running(pid)]
        time.sleep(0.2)


def running(pid: int) -> bool:
    """Alive and not a zombie waiting for its new parent to reap it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status
