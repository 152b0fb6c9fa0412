"""The systems `bench.rocketmq_compare` puts side by side, each a small plug: a name, what it
is, and how to start it on given loopback ports (and so how to stop it).

Longboat runs as `longboat up` (name server and broker in one process).  An Apache RocketMQ
release runs from the test peers' launcher module, which the plug imports when the system is
first started; a launcher module provides

    start_rocketmq(home: Path, *, namesrv_port: int, broker_port_number: int,
                   broker_options: Mapping[str, object]) -> cluster

where `cluster.namesrv_addr` is the name server's address, `cluster.processes[i].proc.pid` the
JVMs' pids and `cluster.stop()` stops them, and `SERVER_JVM_OPTIONS`, the servers' JVM options
(`tests/peers/rocketmq.py` is 4.9.7's).  A system whose launcher module is not there is
listed as unavailable and left out of the default run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longboat.bench.usage import sample

# Apache RocketMQ's launchers and the Java load generator live with the test peers.
TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

START_TIMEOUT_S = 120.0
# RocketMQ as its users run it on a small host: its defaults, asynchronous flush, 1 GiB
# commit-log files; the consume queue's file holds 300,000 entries.
ROCKETMQ_OPTIONS: Mapping[str, object] = {
    "flushDiskType": "ASYNC_FLUSH",
    "mappedFileSizeCommitLog": 1024 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 300_000 * 20,
}


@dataclass
class Running:
    """Servers of one system: the name server address, their pids, and how to stop them."""

    namesrv: str
    pids: list[int]
    stop: Callable[[], None]


@dataclass(frozen=True)
class System:
    """One system under comparison; `start(home, namesrv_port, broker_port, flush)`."""

    name: str
    describe: Callable[[], str]
    start: Callable[[Path, int, int, str], Running]
    available: Callable[[], bool] = lambda: True


def start_longboat(
    home: Path, namesrv_port: int, broker_port: int, flush: str, brokers: int = 1
) -> Running:
    """`longboat up`; with `brokers` > 1 a broker group per process, whose pids are counted
    with `up`'s own (CPU and RSS are the servers' together, as for RocketMQ's two JVMs)."""
    log = (home / "longboat.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "longboat.cli", "up", "--data", str(home / "store"),
         "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port),
         "--metrics-port", "0", "--grpc-port", "-1", "--dashboard-port", "-1",
         "--brokers", str(brokers)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "LONGBOAT_FLUSH_DISK_TYPE": flush},
    )  # fmt: skip

    # Ready once both servers listen (as RocketMQ's starter waits for "boot success"); the
    # cold start is timed by the Java producer's first accepted send, not by this wait.
    deadline = time.monotonic() + START_TIMEOUT_S
    while b"Ctrl-C stops" not in (home / "longboat.log").read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"longboat up did not start: see {home / 'longboat.log'}")
        time.sleep(0.02)

    def stop() -> None:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()

    return Running(f"127.0.0.1:{namesrv_port}", with_descendants([proc.pid]), stop)


def with_descendants(pids: list[int]) -> list[int]:
    """`pids` and every process under them (Linux: /proc/PID/task/*/children).  Each RocketMQ
    JVM runs under a guard process (the peers' lifeline) whose own RSS and CPU are not the
    server's; `longboat up --brokers N` has its broker processes under it."""
    out: list[int] = []
    todo = list(pids)
    while todo:
        pid = todo.pop()
        out.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            todo += [int(child) for child in task.read_text().split()]
    return out


def rss_mib(pids: list[int]) -> float:
    """Resident memory of these processes together, from /proc (Linux)."""
    total_kib = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total_kib += int(line.split()[1])
    return total_kib / 1024


def cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) these processes have used."""
    return sum(sample(pid).cpu_s for pid in pids)


def apache(version: str, launcher: str) -> System:
    """Apache RocketMQ `version`, started by the peers' module `launcher` (see above)."""

    def start(home: Path, namesrv_port: int, broker_port: int, flush: str) -> Running:
        cluster = importlib.import_module(launcher).start_rocketmq(
            home,
            namesrv_port=namesrv_port,
            broker_port_number=broker_port,
            broker_options={**ROCKETMQ_OPTIONS, "flushDiskType": flush},
        )
        return Running(
            cluster.namesrv_addr,
            with_descendants([p.proc.pid for p in cluster.processes]),
            cluster.stop,
        )

    def describe() -> str:
        jvm: Any = importlib.import_module(launcher).BROKER_JVM_OPTIONS
        options = ", ".join(f"{k}={v}" for k, v in ROCKETMQ_OPTIONS.items())
        return (
            f"Apache RocketMQ {version} name server and broker, broker {' '.join(jvm)}, {options}"
        )

    return System(
        f"rocketmq-{version}",
        describe,
        start,
        available=lambda: importlib.util.find_spec(launcher) is not None,
    )


LONGBOAT = System(
    "longboat",
    lambda: "longboat up (name server + broker, one process), flushDiskType=ASYNC_FLUSH",
    start_longboat,
)
SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (LONGBOAT, apache("4.9.7", "peers.rocketmq"), apache("5.3.3", "peers.rocketmq5"))
}


def available() -> list[str]:
    """The systems that can run here, Longboat first."""
    return [name for name, system in SYSTEMS.items() if system.available()]
