"""The systems `bench.rocketmq_compare` puts side by side, each a small plug: a name, what it
is, and how to start it on given loopback ports (and so how to stop it).

Longboat runs as `longboat up` (name server and broker in one process).  An Apache RocketMQ
release runs from the test peers' launcher module (`RELEASES`: the module and its start
function), which the plug imports when the system is first started; a launcher provides

    START(home: Path, *, namesrv_port: int, broker_port_number: int,
          broker_options: Mapping[str, object], broker_jvm_options: tuple[str, ...]) -> cluster

where `cluster.namesrv_addr` is the name server's address, `cluster.processes[i].proc.pid` the
JVMs' pids and `cluster.stop()` stops them, and `BROKER_JVM_OPTIONS`, the broker JVM's default
options (`tests/peers/rocketmq.py` is 4.9.7's; `tests/peers/rocketmq5.py` 5.3.3's, whose proxy
and broker share that JVM).  A system whose launcher module is not there is listed as
unavailable and left out of the default run.

A bench stopped by SIGTERM or Ctrl-C stops the servers it started: starting one here makes
SIGTERM unwind the bench as Ctrl-C does (`unwind_on_sigterm`), so the `finally` around each
server stops it (`tests/bench/test_bench_stops_its_servers.py`).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import threading
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
# What `longboat up` prints once its servers listen.
READY_LINE = b"Ctrl-C stops"
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
    proc = spawn_up(
        ["--data", str(home / "store"),
         "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port),
         "--metrics-port", "0", "--grpc-port", "-1", "--dashboard-port", "-1",
         "--brokers", str(brokers)],
        home / "longboat.log",
        env={**os.environ, "LONGBOAT_FLUSH_DISK_TYPE": flush},
    )  # fmt: skip
    return Running(
        f"127.0.0.1:{namesrv_port}", with_descendants([proc.pid]), lambda: stop_process(proc)
    )


def spawn_up(
    args: list[str],
    log_path: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> subprocess.Popen[bytes]:
    """`longboat up ARGS`, its output appended to `log_path`, once both servers listen (as
    RocketMQ's starter waits for "boot success"; a cold start is timed by the load's first
    accepted send, not by this wait).  RuntimeError, the process stopped, if it exits or
    `timeout_s` passes first; whatever interrupts the wait stops it too.

    It runs in a session of its own, so a Ctrl-C in the terminal reaches the bench alone,
    which stops it on the way out; SIGTERM to the bench does the same (`unwind_on_sigterm`)."""
    unwind_on_sigterm()
    start = log_path.stat().st_size if log_path.exists() else 0
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "longboat.cli", "up", *args],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + timeout_s
        while READY_LINE not in (output := log_path.read_bytes()[start:]):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = output[-3000:].decode(errors="replace")
                raise RuntimeError(f"longboat up did not start; the end of {log_path}:\n{tail}")
            time.sleep(0.02)
    except BaseException:
        stop_process(proc)
        raise
    return proc


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    """SIGTERM (`longboat up` stops its brokers and flushes), SIGKILL if it lingers.  A Ctrl-C
    or SIGTERM to the bench while it waits does not leave the server stopping behind it: the
    wait goes on (a second Ctrl-C kills the server at once), then the interruption does."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        _wait_or_kill(proc, timeout_s)
    except BaseException:
        try:
            _wait_or_kill(proc, timeout_s)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        raise


def _wait_or_kill(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def unwind_on_sigterm() -> None:
    """From now on SIGTERM raises SystemExit in the main thread, as Ctrl-C raises
    KeyboardInterrupt, so the `finally` blocks and context managers around every server a
    bench started stop it before the bench exits (with 128 + SIGTERM).  By default Python dies
    on the spot and orphans them: `longboat up` runs in a session of its own and the Java load
    generators are only its children (RocketMQ's JVMs die with the bench anyway, through their
    lifeline guard).  A second SIGTERM while servers stop is ignored, so it cannot cut their
    stopping short.  Only from the main thread, and only over SIGTERM's default action."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_unwinding)


def _exit_unwinding(signum: int, _frame: object) -> None:
    signal.signal(signum, signal.SIG_IGN)
    raise SystemExit(128 + signum)


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


# Each Apache RocketMQ release: its launcher module and start function (see above).
RELEASES: dict[str, tuple[str, str]] = {
    "4.9.7": ("peers.rocketmq", "start_rocketmq"),
    "5.3.3": ("peers.rocketmq5", "start_rocketmq5"),
}


def start_apache(
    version: str,
    home: Path,
    namesrv_port: int,
    broker_port: int,
    flush: str,
    broker_jvm_options: tuple[str, ...] | None = None,
) -> tuple[Running, str]:
    """Apache RocketMQ `version` on these ports, its broker's JVM options the launcher's unless
    given; the servers and the broker's address."""
    unwind_on_sigterm()
    module, function = RELEASES[version]
    jvm = {} if broker_jvm_options is None else {"broker_jvm_options": broker_jvm_options}
    cluster = getattr(importlib.import_module(module), function)(
        home,
        namesrv_port=namesrv_port,
        broker_port_number=broker_port,
        broker_options={**ROCKETMQ_OPTIONS, "flushDiskType": flush},
        **jvm,
    )
    running = Running(
        cluster.namesrv_addr,
        with_descendants([p.proc.pid for p in cluster.processes]),
        cluster.stop,
    )
    return running, cluster.broker_addr


def release_name(version: str) -> str:
    """The system that is Apache RocketMQ `version`: `rocketmq-VERSION`."""
    return f"rocketmq-{version}"


def apache(version: str) -> System:
    """Apache RocketMQ `version` of `RELEASES`, started by its launcher (see above)."""
    module = RELEASES[version][0]

    def start(home: Path, namesrv_port: int, broker_port: int, flush: str) -> Running:
        return start_apache(version, home, namesrv_port, broker_port, flush)[0]

    def describe() -> str:
        jvm: Any = importlib.import_module(module).BROKER_JVM_OPTIONS
        options = ", ".join(f"{k}={v}" for k, v in ROCKETMQ_OPTIONS.items())
        return (
            f"Apache RocketMQ {version} name server and broker, broker {' '.join(jvm)}, {options}"
        )

    return System(
        release_name(version),
        describe,
        start,
        available=lambda: importlib.util.find_spec(module) is not None,
    )


LONGBOAT = System(
    "longboat",
    lambda: "longboat up (name server + broker, one process), flushDiskType=ASYNC_FLUSH",
    start_longboat,
)
SYSTEMS: dict[str, System] = {
    s.name: s for s in (LONGBOAT, *(apache(version) for version in RELEASES))
}


def available() -> list[str]:
    """The systems that can run here, Longboat first."""
    return [name for name, system in SYSTEMS.items() if system.available()]
