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
* then the `Bench` JVM (RocketMQ's 4.9.8 Java client, tests/peers/java) runs the load cases:
  one-at-a-time sync produce, batched produce (64 x 256 B, 4 in flight), a push consumer's
  drain of `--drain` messages, a fan-out of `--drain` messages to 4 groups, and the wake-up
  latency of a parked push consumer (send -> listener, p50/p99/p999); the servers' CPU time
  around the batched produce, the drain and the fan-out gives broker CPU per message
  produced, per message consumed and per fan-out delivery, and the load generator's own CPU
  over the fan-out's consumption (it reports it) what the Java client spent per delivery;
* Longboat's Python client (`longboat.bench.loadgen`) as a second load generator: batched
  produce, pulls of 32, and `--parked` pulls parked on one idle queue (broker CPU over 3 s and
  RSS growth, both brokers' processes measured the same way);
* finally each system is started again with flushDiskType=SYNC_FLUSH and 16 threads of the
  Java client send one message at a time each.

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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# Apache RocketMQ's launcher and the Java load generator live with the test peers.
TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from longboat.bench import loadgen  # noqa: E402
from longboat.bench.usage import sample  # noqa: E402
from longboat.remoting.event_loop import run as run_async  # noqa: E402
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
    ("syncflush", "SYNC_FLUSH produce (16 producers, 1 msg each)", "msgs/s", None),
    ("drain", "push-consumer drain", "msgs/s", (">=", 1.0)),
    ("fanout", "fan-out to 4 groups (all deliveries)", "msgs/s", (">=", 1.0)),
    ("wakeup_p50", "wake-up p50 (parked push consumer)", "us", ("<=", 0.7)),
    ("wakeup_p99", "wake-up p99", "us", ("<=", 1.0)),
    ("wakeup_p999", "wake-up p999", "us", None),
    ("cold_start", "cold start to first accepted send", "ms", ("<=", 0.2)),
    ("idle_rss", "idle RSS", "MiB", ("<=", 0.1)),
    ("cpu_produce", "broker CPU per message produced (batched)", "us", None),
    ("cpu_consume", "broker CPU per message consumed (drain)", "us", None),
    ("cpu_fanout", "broker CPU per fan-out delivery", "us", None),
    ("client_cpu_fanout", "load generator CPU per fan-out delivery", "us", None),
    ("parked_cpu", "parked pulls: broker CPU (Python client)", "%", ("<=", 1.0)),
    ("parked_rss", "parked pulls: broker RSS growth", "MiB", None),
    ("py_batch", "batched produce, Python client", "msgs/s", None),
    ("py_consume", "consume, Python client (pulls of 32)", "msgs/s", None),
)
SYSTEMS = ("longboat", "rocketmq")
# Rows shown side by side without a ratio: a JVM's RSS hardly moves while pulls park (its heap
# was reserved at start), so RocketMQ's growth is a few MiB of either sign and a ratio to it
# would be noise (it ranged over 7x-2,445x in five runs).
NO_RATIO = frozenset({"parked_rss"})


@dataclass
class Running:
    """Servers of one system: the name server address, their pids, and how to stop them."""

    namesrv: str
    pids: list[int]
    stop: Callable[[], None]


def start_longboat(
    home: Path, namesrv_port: int, broker_port_number: int, flush: str = "ASYNC_FLUSH"
) -> Running:
    log = (home / "longboat.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "longboat.cli", "up", "--data", str(home / "store"),
         "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port_number),
         "--metrics-port", "0", "--grpc-port", "-1", "--dashboard-port", "-1"],
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

    return Running(f"127.0.0.1:{namesrv_port}", [proc.pid], stop)


def start_apache(
    home: Path, namesrv_port: int, broker_port_number: int, flush: str = "ASYNC_FLUSH"
) -> Running:
    cluster = start_rocketmq(
        home,
        namesrv_port=namesrv_port,
        broker_port_number=broker_port_number,
        broker_options={**ROCKETMQ_OPTIONS, "flushDiskType": flush},
    )
    return Running(cluster.namesrv_addr, [p.proc.pid for p in cluster.processes], cluster.stop)


STARTERS: dict[str, Callable[..., Running]] = {
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


def cpu_s(pids: list[int]) -> float:
    return sum(sample(pid).cpu_s for pid in pids)


def java_cases(
    system: str, running: Running, sizes: argparse.Namespace, run: int, cases: str
) -> dict[str, dict[str, Any]]:
    """One `Bench` JVM running `cases`; its figures by case."""
    events = run_peer(
        f"{system} {cases}",
        bench_command(
            namesrv=running.namesrv, cases=cases, topic_prefix=f"run{run}",
            single=sizes.single, batches=sizes.batches, drain=sizes.drain, rounds=sizes.rounds,
            groups=4, producers=16, timeout_ms=sizes.timeout * 1000,
        ),
        CLIENT_DIR,
        timeout=sizes.timeout + 60,
    )  # fmt: skip
    return {e["case"]: e for e in events if e.get("event") == "figures"}


def python_cases(running: Running, broker_pid: int, sizes: argparse.Namespace) -> dict[str, float]:
    """Longboat's Python client as the load: batched produce, pulls of 32, parked pulls."""
    opts = loadgen.LoadOptions(namesrv=running.namesrv, size=256, duration=60.0)

    async def go() -> dict[str, float]:
        produced = await loadgen.produce(
            replace(opts, messages=sizes.batches * 64, batch=64, concurrency=4)
        )
        consumed = await loadgen.consume(replace(opts, batch=32), preloaded=sizes.drain)
        parked = await loadgen.holds(opts, count=sizes.parked, window_s=3.0, pid=broker_pid)
        return {
            "py_batch": produced.tps,
            "py_consume": consumed.tps,
            "parked_cpu": float(parked.extra["cpu_pct"]),
            "parked_rss": float(parked.extra["rss_bytes_per_poll"]) * sizes.parked / 2**20,
        }

    return run_async(go())


def one_system(system: str, sizes: argparse.Namespace, run: int) -> dict[str, float | None]:
    with tempfile.TemporaryDirectory(prefix=f"compare-{system}-") as home:
        start_ms, running = cold_start(system, Path(home))
        try:
            time.sleep(IDLE_S)
            figures: dict[str, float | None] = {
                "cold_start": start_ms,
                "idle_rss": rss_mib(running.pids),
            }
            by_case = java_cases(system, running, sizes, run, "single,wakeup")
            before = cpu_s(running.pids)
            by_case |= java_cases(system, running, sizes, run, "batch")
            produced = cpu_s(running.pids)
            by_case |= java_cases(system, running, sizes, run, "drain")
            drained = cpu_s(running.pids)
            by_case |= java_cases(system, running, sizes, run, "fanout")
            fanned = cpu_s(running.pids)
            figures |= python_cases(running, running.pids[-1], sizes)
        finally:
            running.stop()
        sync_home = Path(home) / "sync"
        sync_home.mkdir()
        syncing = STARTERS[system](sync_home, broker_port(), broker_port(), "SYNC_FLUSH")
        try:
            by_case |= java_cases(system, syncing, sizes, run, "syncsend")
        finally:
            syncing.stop()
    per_produced = (produced - before) * 1e6 / by_case["batch"]["messages"]
    drain_n = by_case["drain"]["messages"]
    # The drain case stores its messages first (batched, as measured above), then consumes.
    # Not measurable when storing them cost less than that rate (a JVM warmed up by then):
    # the difference is then at or below zero.
    per_consumed = ((drained - produced) * 1e6 - per_produced * drain_n) / drain_n
    # The fan-out case stores its messages the same way, then 4 groups take them all.
    fill = by_case["fanout"]["messages"]
    deliveries = fill * by_case["fanout"]["groups"]
    per_delivery = ((fanned - drained) * 1e6 - per_produced * fill) / deliveries
    figures.update(
        single=by_case["single"]["msgsPerS"],
        batch=by_case["batch"]["msgsPerS"],
        syncflush=by_case["syncsend"]["msgsPerS"],
        drain=by_case["drain"]["msgsPerS"],
        fanout=by_case["fanout"]["msgsPerS"],
        wakeup_p50=by_case["wakeup"]["p50Us"],
        wakeup_p99=by_case["wakeup"]["p99Us"],
        wakeup_p999=by_case["wakeup"]["p999Us"],
        cpu_produce=per_produced,
        cpu_consume=per_consumed if per_consumed > 0 else None,
        cpu_fanout=per_delivery if per_delivery > 0 else None,
        client_cpu_fanout=by_case["fanout"]["clientCpuS"] * 1e6 / deliveries,
    )
    return figures


def compare(sizes: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run both systems `sizes.runs` times, interleaved; the per-run figures and the summary."""
    runs: list[dict[str, dict[str, float | None]]] = []
    for run in range(sizes.runs):
        order = SYSTEMS if run % 2 == 0 else tuple(reversed(SYSTEMS))
        figures = {}
        for system in order:
            figures[system] = one_system(system, sizes, run)
            log(f"run {run + 1}/{sizes.runs} {system}: {json.dumps(figures[system])}")
        runs.append(figures)
    return {"settings": settings(sizes), "runs": runs, "summary": summarize(runs)}


def summarize(runs: list[dict[str, dict[str, float | None]]]) -> dict[str, Any]:
    """Per row: each system's median, min and max, the median of the per-run ratios and the
    target's verdict.  A figure a run could not measure (None, or absent from runs recorded
    before the row existed) leaves that run out of the row's ratio; a row no run measured
    for both, or one of `NO_RATIO`, has no ratio."""
    summary: dict[str, Any] = {}
    for key, _label, _unit, target in ROWS:
        ratios = [
            _ratio(ours, theirs)
            for r in runs
            if key not in NO_RATIO
            and (ours := r["longboat"].get(key)) is not None
            and (theirs := r["rocketmq"].get(key)) is not None
        ]
        ratio = statistics.median(ratios) if ratios else None
        met = None
        if target is not None and ratio is not None:
            op, bound = target
            met = ratio >= bound if op == ">=" else ratio <= bound
        cells: dict[str, Any] = {}
        for system in SYSTEMS:
            values = [v for r in runs if (v := r[system].get(key)) is not None]
            cells[system] = (
                {"median": statistics.median(values), "min": min(values), "max": max(values)}
                if values
                else None
            )
        summary[key] = {
            **cells,
            "ratio": ratio,
            "ratios": ratios,
            "target": None if target is None else f"{target[0]} {target[1]}",
            "met": met,
        }
    return summary


def ratio_label(row: dict[str, Any], runs: int) -> str:
    """A row's ratio as printed and drawn, saying how many runs it rests on when some could
    not measure it (a derived CPU figure can be missing, see `summarize`)."""
    if row["ratio"] is None:
        return "-"
    label = f"{row['ratio']:.2f}x"
    measured = len(row["ratios"])
    return label if measured >= runs else f"{label} ({measured} of {runs} runs)"


def _ratio(ours: float, theirs: float) -> float:
    """Longboat / RocketMQ; a RocketMQ figure of 0 (an idle broker's CPU) counts as 0.01."""
    return ours / max(theirs, 0.01)


def settings(sizes: argparse.Namespace) -> dict[str, Any]:
    return {
        "runs": sizes.runs,
        "single": sizes.single,
        "batches": sizes.batches,
        "drain": sizes.drain,
        "rounds": sizes.rounds,
        "parked": sizes.parked,
        "load generator": "Apache RocketMQ Java client 4.9.8, " + " ".join(LOADGEN_JVM_OPTIONS),
        "rocketmq": "Apache RocketMQ 4.9.7 name server + broker, each "
        + " ".join(SERVER_JVM_OPTIONS)
        + ", "
        + ", ".join(f"{k}={v}" for k, v in ROCKETMQ_OPTIONS.items()),
        "longboat": "longboat up (name server + broker, one process), flushDiskType=ASYNC_FLUSH",
    }


def report(result: dict[str, Any]) -> None:
    runs = len(result["runs"])
    for name, value in result["settings"].items():
        print(f"{name}: {value}")
    print()
    header = f"{'figure':44} {'Longboat':>20} {'RocketMQ':>20} {'LB/RMQ':>7}  target"
    print(header)
    for key, label, unit, _target in ROWS:
        row = result["summary"][key]

        def cell(system: str, row: dict[str, Any] = row) -> str:
            f = row[system]
            if f is None:
                return "not measured"
            digits = 1 if f["max"] < 100 else 0
            return f"{f['median']:,.{digits}f} ({f['min']:,.{digits}f}-{f['max']:,.{digits}f})"

        verdict = "" if row["met"] is None else ("met" if row["met"] else "missed")
        print(
            f"{label + ' ' + unit:44} {cell('longboat'):>20} {cell('rocketmq'):>20} "
            f"{ratio_label(row, runs):>7}  {row['target'] or '-'} {verdict}"
        )
    print("\ncells: median (min-max) over the runs; LB/RMQ: median of the per-run ratios")


def plot(result: dict[str, Any], path: Path) -> None:
    """Longboat / RocketMQ per row on a log axis, the target of each row marked: the
    side-by-side picture bench/README.md shows."""
    from longboat.bench.plot import pyplot

    plt = pyplot()
    runs = len(result["runs"])
    rows = [
        (label, unit, result["summary"][key])
        for key, label, unit, _ in ROWS
        if result["summary"][key]["ratio"] is not None
    ]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.2))
    for i, (_label, _unit, row) in enumerate(reversed(rows)):
        ratio = max(row["ratio"], 1e-3)
        colour = {True: "tab:green", False: "tab:red", None: "tab:gray"}[row["met"]]
        ax.barh(i, ratio, color=colour)
        ax.text(ratio * 1.05, i, ratio_label(row, runs), va="center", fontsize=8)
        if row["target"]:
            ax.plot([float(row["target"].split()[1])] * 2, [i - 0.4, i + 0.4], "k--", lw=1)
    ax.set_yticks(range(len(rows)), [f"{label} ({unit})" for label, unit, _ in reversed(rows)])
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    ax.set_xlim(low, high * 10)  # room for the labels right of the longest bar
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlabel("Longboat / RocketMQ (median of the runs; dashed: the target)")
    fig.suptitle("Longboat against Apache RocketMQ 4.9, same load generator, same run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rocketmq_compare", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--single", type=int, default=2000, help="one-at-a-time sends")
    parser.add_argument("--batches", type=int, default=500, help="batches of 64 messages")
    parser.add_argument("--drain", type=int, default=200_000, help="messages the consumer drains")
    parser.add_argument("--rounds", type=int, default=500, help="wake-ups timed")
    parser.add_argument("--parked", type=int, default=10_000, help="pulls parked at once")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per load run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: drain 20,000 ...")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--plot", type=Path, help="also draw the ratios (PNG) here")
    parser.add_argument(
        "--replot", type=Path, help="no run: summarize, print and draw the runs of this JSON"
    )
    options = parser.parse_args(argv)
    if options.quick:
        options.single, options.batches, options.drain, options.rounds = 1000, 200, 20_000, 200
    return options


def main() -> None:
    options = parse()
    if options.replot:
        result = json.loads(options.replot.read_text())
        result["summary"] = summarize(result["runs"])
    else:
        result = compare(options)
    report(result)
    if options.json:
        options.json.write_text(json.dumps(result, indent=2))
    if options.plot:
        plot(result, options.plot)


if __name__ == "__main__":
    main()
