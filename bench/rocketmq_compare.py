"""Longboat against Apache RocketMQ, side by side: the same Java client as the load for both.

    python -m bench.rocketmq_compare [--runs 3] [--single 2000] [--batches 500] [--drain 200000]
                                     [--rounds 500] [--quick] [--json PATH]

Each run starts, one after the other on loopback (the order alternating between runs), Apache
RocketMQ's name server and broker (two JVMs from Maven Central's jars, `peers.rocketmq`,
ASYNC_FLUSH, 1 GiB commit-log files as its default) and Longboat (`longboat up`: name server and
broker in one process, ASYNC_FLUSH, its defaults), each with a fresh store, and measures on each:

* cold start: from spawning the server processes to the first send they accept, seen by a Java
  producer already running and retrying every 20 ms (`Bench --cases firstsend`);
* idle RSS: the servers' resident memory 2 s after that first send (RocketMQ: both JVMs;
  Longboat: its one process);
* then one `Bench` JVM (RocketMQ's 4.9.8 Java client, tests/peers/java) runs the load cases:
  one-at-a-time sync produce, batched produce (64 x 256 B, 4 in flight), a push consumer's
  drain of `--drain` messages, and the wake-up latency of a parked push consumer (send -> listener).

Figures are the medians over `--runs` runs; the ratio is Longboat / RocketMQ within each run,
and its median is shown, next to the issue #14 target it is held against.  Java and Maven are
needed (`make java-peers`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Apache RocketMQ's launcher and the Java load generator live with the test peers.
TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from peers.process import PeerProcess, run_peer  # noqa: E402
from peers.rocketmq import (  # noqa: E402
    CLIENT_DIR,
    SERVER_JVM_OPTIONS,
    broker_port,
    peer_args,
    peer_command,
    start_rocketmq,
)

# The load generator runs for minutes: full JIT and a heap that holds a drain in flight.
LOADGEN_JVM_OPTIONS = ("-Xms512m", "-Xmx512m", "-XX:+UseParallelGC")
ROCKETMQ_OPTIONS = {
    "flushDiskType": "ASYNC_FLUSH",
    "mappedFileSizeCommitLog": 1024 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 300_000 * 20,
}
IDLE_S = 2.0
START_TIMEOUT_S = 120.0

# (figure key, label, unit, target as (comparison, Longboat / RocketMQ) or None)
ROWS: tuple[tuple[str, str, str, tuple[str, float] | None], ...] = (
    ("single", "produce one at a time (sync, 1 producer)", "msgs/s", None),
    ("batch", "batched produce (64 x 256 B, 4 in flight)", "msgs/s", (">=", 1.0)),
    ("drain", "push-consumer drain", "msgs/s", (">=", 1.0)),
    ("wakeup_p50", "wake-up p50 (parked push consumer)", "us", ("<=", 0.7)),
    ("wakeup_p99", "wake-up p99", "us", ("<=", 1.0)),
    ("cold_start", "cold start to first accepted send", "ms", ("<=", 0.2)),
    ("idle_rss", "idle RSS", "MiB", ("<=", 0.1)),
)
SYSTEMS = ("longboat", "rocketmq")


@dataclass
class Running:
    """Servers of one system: the name server address, their pids, and how to stop them."""

    namesrv: str
    pids: list[int]
    stop: Callable[[], None]


def start_longboat(home: Path, namesrv_port: int, broker_port_number: int) -> Running:
    log = (home / "longboat.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "longboat.cli", "up", "--data", str(home / "store"),
         "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port_number),
         "--metrics-port", "0", "--grpc-port", "-1", "--dashboard-port", "-1"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip

    def stop() -> None:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()

    return Running(f"127.0.0.1:{namesrv_port}", [proc.pid], stop)


def start_apache(home: Path, namesrv_port: int, broker_port_number: int) -> Running:
    cluster = start_rocketmq(
        home,
        namesrv_port=namesrv_port,
        broker_port_number=broker_port_number,
        broker_options=ROCKETMQ_OPTIONS,
    )
    return Running(cluster.namesrv_addr, [p.proc.pid for p in cluster.processes], cluster.stop)


STARTERS: dict[str, Callable[[Path, int, int], Running]] = {
    "longboat": start_longboat,
    "rocketmq": start_apache,
}


def rss_mib(pids: list[int]) -> float:
    """Resident memory of these processes together, from /proc (Linux)."""
    total_kib = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total_kib += int(line.split()[1])
    return total_kib / 1024


def bench_command(**options: object) -> list[str]:
    return peer_command("Bench", peer_args(options), LOADGEN_JVM_OPTIONS)


def cold_start(system: str, home: Path) -> tuple[float, Running]:
    """Milliseconds from spawning `system`'s servers to the first send they accept."""
    namesrv_port, broker = broker_port(), broker_port()
    command = bench_command(
        namesrv=f"127.0.0.1:{namesrv_port}", cases="firstsend", topic_prefix="cold",
        timeout_ms=int(START_TIMEOUT_S * 1000),
    )  # fmt: skip
    with PeerProcess(f"{system} cold start", command, CLIENT_DIR) as peer:
        peer.wait_for("started", 60)
        spawned_ms = time.time() * 1000
        running = STARTERS[system](home, namesrv_port, broker)
        try:
            accepted = peer.wait_for("figures", START_TIMEOUT_S)
            peer.wait(30)
        except BaseException:
            running.stop()
            raise
    return float(accepted["acceptedAtMs"]) - spawned_ms, running


def one_system(system: str, sizes: argparse.Namespace, run: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"compare-{system}-") as home:
        start_ms, running = cold_start(system, Path(home))
        try:
            time.sleep(IDLE_S)
            figures = {"cold_start": start_ms, "idle_rss": rss_mib(running.pids)}
            events = run_peer(
                f"{system} load",
                bench_command(
                    namesrv=running.namesrv, cases="single,batch,drain,wakeup",
                    topic_prefix=f"run{run}", single=sizes.single, batches=sizes.batches,
                    drain=sizes.drain, rounds=sizes.rounds, timeout_ms=sizes.timeout * 1000,
                ),
                CLIENT_DIR,
                timeout=sizes.timeout + 60,
            )  # fmt: skip
        finally:
            running.stop()
    by_case = {e["case"]: e for e in events if e.get("event") == "figures"}
    figures.update(
        single=by_case["single"]["msgsPerS"],
        batch=by_case["batch"]["msgsPerS"],
        drain=by_case["drain"]["msgsPerS"],
        wakeup_p50=by_case["wakeup"]["p50Us"],
        wakeup_p99=by_case["wakeup"]["p99Us"],
    )
    return figures


def compare(sizes: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run both systems `sizes.runs` times, interleaved; the per-run figures and the summary."""
    runs: list[dict[str, dict[str, float]]] = []
    for run in range(sizes.runs):
        order = SYSTEMS if run % 2 == 0 else tuple(reversed(SYSTEMS))
        figures = {}
        for system in order:
            figures[system] = one_system(system, sizes, run)
            log(f"run {run + 1}/{sizes.runs} {system}: {json.dumps(figures[system])}")
        runs.append(figures)
    summary = {}
    for key, _label, _unit, target in ROWS:
        ratios = [r["longboat"][key] / r["rocketmq"][key] for r in runs]
        ratio = statistics.median(ratios)
        met = None
        if target is not None:
            op, bound = target
            met = ratio >= bound if op == ">=" else ratio <= bound
        summary[key] = {
            **{
                s: {
                    "median": statistics.median(r[s][key] for r in runs),
                    "min": min(r[s][key] for r in runs),
                    "max": max(r[s][key] for r in runs),
                }
                for s in SYSTEMS
            },
            "ratio": ratio,
            "ratios": ratios,
            "target": None if target is None else f"{target[0]} {target[1]}",
            "met": met,
        }
    return {"settings": settings(sizes), "runs": runs, "summary": summary}


def settings(sizes: argparse.Namespace) -> dict[str, Any]:
    return {
        "runs": sizes.runs,
        "single": sizes.single,
        "batches": sizes.batches,
        "drain": sizes.drain,
        "rounds": sizes.rounds,
        "load generator": "Apache RocketMQ Java client 4.9.8, " + " ".join(LOADGEN_JVM_OPTIONS),
        "rocketmq": "Apache RocketMQ 4.9.7 name server + broker, each "
        + " ".join(SERVER_JVM_OPTIONS)
        + ", "
        + ", ".join(f"{k}={v}" for k, v in ROCKETMQ_OPTIONS.items()),
        "longboat": "longboat up (name server + broker, one process), flushDiskType=ASYNC_FLUSH",
    }


def report(result: dict[str, Any]) -> None:
    for name, value in result["settings"].items():
        print(f"{name}: {value}")
    print()
    header = f"{'figure':44} {'Longboat':>20} {'RocketMQ':>20} {'LB/RMQ':>7}  target"
    print(header)
    for key, label, unit, _target in ROWS:
        row = result["summary"][key]

        def cell(system: str, row: dict[str, Any] = row) -> str:
            f = row[system]
            return f"{f['median']:,.0f} ({f['min']:,.0f}-{f['max']:,.0f})"

        verdict = "" if row["met"] is None else ("met" if row["met"] else "missed")
        print(
            f"{label + ' ' + unit:44} {cell('longboat'):>20} {cell('rocketmq'):>20} "
            f"{row['ratio']:>6.2f}x  {row['target'] or '-'} {verdict}"
        )
    print("\ncells: median (min-max) over the runs; LB/RMQ: median of the per-run ratios")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rocketmq_compare", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--single", type=int, default=2000, help="one-at-a-time sends")
    parser.add_argument("--batches", type=int, default=500, help="batches of 64 messages")
    parser.add_argument("--drain", type=int, default=200_000, help="messages the consumer drains")
    parser.add_argument("--rounds", type=int, default=500, help="wake-ups timed")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per load run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: drain 20,000 ...")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args(argv)
    if options.quick:
        options.single, options.batches, options.drain, options.rounds = 1000, 200, 20_000, 200
    return options


def main() -> None:
    options = parse()
    result = compare(options)
    report(result)
    if options.json:
        options.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
