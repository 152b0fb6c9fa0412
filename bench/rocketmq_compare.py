"""Longboat against Apache RocketMQ, side by side: the same Java client as the load for all.

    python -m bench.rocketmq_compare [--runs 3] [--warmup 3] [--duration 10]
                                     [--systems longboat,rocketmq-4.9.7,rocketmq-5.3.3]
                                     [--json PATH] [--plot PATH] [--replot JSON]

Each run starts every system in turn on loopback (the order rotating between runs), each with a
fresh store and one system up at a time, each as its users run it (`bench.compare_systems`:
`longboat up` with its defaults; Apache RocketMQ's name server and broker from Maven Central's
jars with theirs, ASYNC_FLUSH, 1 GiB commit-log files, 512 MiB heaps), and measures on each:

* cold start, apart from the steady state: from spawning the servers to the first send they
  accept, seen by a Java producer already running and retrying every 20 ms; then the servers'
  idle RSS 2 s after that send;
* steady state, the `Bench` JVM (RocketMQ's 4.9.8 Java client, tests/peers/java) as the load:
  every phase runs `--warmup` seconds on its connections, then is timed over a window of
  `--duration` seconds, and the servers' CPU time is read at the window's edges (the JVM
  announces them): one-at-a-time sync produce (1 thread; p50/p99), batched produce (4 threads x
  64 x 256 B), 8 threads of sync single sends, a push consumer draining a backlog stored for
  warm-up + duration, a fan-out of such a backlog to 4 groups, and the wake-up latency of a
  parked push consumer (send -> listener, p50/p99/p999);
* Longboat's Python client (`longboat.bench.loadgen`) as a second load: batched produce by
  duration after a warm-up, pulls of 32 over a backlog of `--py-drain`, and `--parked` pulls
  parked on one idle queue (broker CPU over 10 s and RSS growth);
* finally each system again with flushDiskType=SYNC_FLUSH and 16 threads of sync single sends.

Every run's figures go to the JSON (`bench/results/rocketmq_compare.json` unless `--json`),
with the commit, host, CPU model and date; the ratio is Longboat / each RocketMQ within a run,
and its median over the runs is held against the row's target.  `python -m bench.report`
makes the page from it.  Java and Maven are needed (`make java-peers`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import results
from bench.compare_systems import (
    LONGBOAT,
    START_TIMEOUT_S,
    SYSTEMS,
    Running,
    available,
    cpu_s,
    rss_mib,
    unwind_on_sigterm,
)
from longboat.bench import loadgen
from longboat.remoting.event_loop import run as run_async
from peers.process import PeerProcess
from peers.rocketmq import CLIENT_DIR, broker_port, peer_args, peer_command

BENCHMARK = "rocketmq_compare"
# The load generator runs for minutes: full JIT and a heap that holds a drain in flight.
LOADGEN_JVM_OPTIONS = ("-Xms512m", "-Xmx512m", "-XX:+UseParallelGC")
IDLE_S = 2.0
WRITERS = 8
SYNC_FLUSH_WRITERS = 16

# (figure key, label, unit, target as (comparison, Longboat / RocketMQ) or None).  The targets
# are issue #39's (batched produce, its CPU, 8 writers) and the leads to keep (issue #14's).
ROWS: tuple[tuple[str, str, str, tuple[str, float] | None], ...] = (
    ("batch", "batched produce, 4 threads x 64 x 256 B", "msgs/s", (">=", 1.0)),
    ("cpu_batch", "broker CPU per message, batched", "us", ("<=", 1.0)),
    ("writers", f"sync produce, {WRITERS} threads, 1 message per send", "msgs/s", (">=", 1.0)),
    ("cpu_writers", f"broker CPU per message, {WRITERS} threads", "us", None),
    ("single", "sync produce, 1 thread", "msgs/s", (">=", 1.0)),
    ("single_p99", "sync produce, 1 thread, p99", "us", ("<=", 1.0)),
    ("drain", "push-consumer drain", "msgs/s", (">=", 1.0)),
    ("cpu_drain", "broker CPU per message consumed", "us", None),
    ("fanout", "fan-out to 4 groups (all deliveries)", "msgs/s", (">=", 1.0)),
    ("cpu_fanout", "broker CPU per fan-out delivery", "us", None),
    ("client_cpu_fanout", "load generator CPU per fan-out delivery", "us", None),
    ("wakeup_p50", "wake-up p50 (parked push consumer)", "us", ("<=", 1.0)),
    ("wakeup_p99", "wake-up p99", "us", ("<=", 1.0)),
    ("wakeup_p999", "wake-up p999", "us", None),
    ("syncflush", f"SYNC_FLUSH produce, {SYNC_FLUSH_WRITERS} threads", "msgs/s", None),
    ("parked_cpu", "parked pulls: broker CPU (Python client)", "%", ("<=", 1.0)),
    ("parked_rss", "parked pulls: broker RSS growth", "MiB", None),
    ("py_batch", "batched produce, Python client", "msgs/s", None),
    ("py_consume", "consume, Python client (pulls of 32)", "msgs/s", None),
    ("cold_start", "cold start to first accepted send", "ms", ("<=", 0.2)),
    ("idle_rss", "idle RSS", "MiB", ("<=", 0.1)),
)
# The rows of the cold start, reported apart from the steady state.
COLD = frozenset({"cold_start", "idle_rss"})
# Rows shown side by side without a ratio: a JVM's RSS hardly moves while pulls park (its heap
# was reserved at start), so RocketMQ's growth is a few MiB of either sign and a ratio to it
# would be noise (it ranged over 7x-2,445x in five runs).
NO_RATIO = frozenset({"parked_rss"})
# The parked pulls' CPU is read over `--duration` (default 10 s), where one clock tick is 0.1 %.
ONE_TICK_PCT = 100 / (os.sysconf("SC_CLK_TCK") * 10.0)
Figures = dict[str, float | None]


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
        running = SYSTEMS[system].start(home, namesrv_port, broker, "ASYNC_FLUSH")
        try:
            accepted = peer.wait_for("figures", START_TIMEOUT_S)
            peer.wait(30)
        except BaseException:
            running.stop()
            raise
    return float(accepted["acceptedAtMs"]) - spawned_ms, running


def java_cases(
    system: str,
    running: Running,
    sizes: argparse.Namespace,
    run: int,
    cases: str,
    on_window: Callable[[str, str], None] | None = None,
    **extra: object,
) -> dict[str, dict[str, Any]]:
    """One `Bench` JVM running `cases`; its figures by case, each with `brokerCpuS`: the
    servers' CPU time over the case's measured window.  `on_window(case, edge)` is called as
    each window opens and closes (a profiler sampling the steady state alone)."""
    command = bench_command(
        namesrv=running.namesrv, cases=cases, topic_prefix=f"run{run}",
        warmup_ms=int(sizes.warmup * 1000), duration_ms=int(sizes.duration * 1000),
        groups=4, timeout_ms=sizes.timeout * 1000, **extra,
    )  # fmt: skip
    figures: dict[str, dict[str, Any]] = {}
    opened: dict[str, float] = {}
    with PeerProcess(f"{system} {cases}", command, CLIENT_DIR) as peer:
        for event in peer.events(sizes.timeout + 60):
            if event.get("event") == "window":
                if on_window is not None:
                    on_window(event["case"], event["edge"])
                if event["edge"] == "open":
                    opened[event["case"]] = cpu_s(running.pids)
                else:
                    opened[event["case"]] = cpu_s(running.pids) - opened[event["case"]]
            elif event.get("event") == "figures":
                figures[event["case"]] = {**event, "brokerCpuS": opened.get(event["case"])}
            elif event.get("event") == "error":
                raise RuntimeError(f"{system} {cases}: {event}")
        peer.wait(30)
    return figures


def python_cases(running: Running, broker_pid: int, sizes: argparse.Namespace) -> Figures:
    """Longboat's Python client as the load: batched produce, pulls of 32, parked pulls."""
    opts = loadgen.LoadOptions(namesrv=running.namesrv, size=256, duration=sizes.duration)

    async def go() -> Figures:
        batched = replace(opts, batch=64, concurrency=4)
        await loadgen.produce(replace(batched, duration=sizes.warmup))
        produced = await loadgen.produce(batched)
        consumed = await loadgen.consume(replace(opts, batch=32), preloaded=sizes.py_drain)
        parked = await loadgen.holds(
            opts, count=sizes.parked, window_s=sizes.duration, pid=broker_pid
        )
        return {
            "py_batch": produced.tps,
            "py_consume": consumed.tps,
            "parked_cpu": float(parked.extra["cpu_pct"]),
            "parked_rss": float(parked.extra["rss_bytes_per_poll"]) * sizes.parked / 2**20,
        }

    return run_async(go())


def per_message_us(case: Mapping[str, Any]) -> float | None:
    """Broker CPU µs per message of a case's window (None when nothing was counted)."""
    if not case["messages"] or case["brokerCpuS"] is None:
        return None
    return float(case["brokerCpuS"]) * 1e6 / float(case["messages"])


def one_system(system: str, sizes: argparse.Namespace, run: int) -> Figures:
    with tempfile.TemporaryDirectory(prefix=f"compare-{system}-") as home:
        start_ms, running = cold_start(system, Path(home))
        try:
            time.sleep(IDLE_S)
            figures: Figures = {"cold_start": start_ms, "idle_rss": rss_mib(running.pids)}
            by_case = java_cases(system, running, sizes, run, "single,batch,wakeup,drain,fanout")
            by_case["writers"] = java_cases(
                system, running, sizes, run, "syncsend", producers=WRITERS
            )["syncsend"]
            figures |= python_cases(running, running.pids[-1], sizes)
        finally:
            running.stop()
        sync_home = Path(home) / "sync"
        sync_home.mkdir()
        syncing = SYSTEMS[system].start(sync_home, broker_port(), broker_port(), "SYNC_FLUSH")
        try:
            by_case |= java_cases(
                system, syncing, sizes, run, "syncsend", producers=SYNC_FLUSH_WRITERS
            )
        finally:
            syncing.stop()
    fanout = by_case["fanout"]
    figures.update(
        single=by_case["single"]["msgsPerS"],
        single_p99=by_case["single"]["p99Us"],
        batch=by_case["batch"]["msgsPerS"],
        cpu_batch=per_message_us(by_case["batch"]),
        writers=by_case["writers"]["msgsPerS"],
        cpu_writers=per_message_us(by_case["writers"]),
        drain=by_case["drain"]["msgsPerS"],
        cpu_drain=per_message_us(by_case["drain"]),
        fanout=fanout["msgsPerS"],
        cpu_fanout=per_message_us(fanout),
        client_cpu_fanout=(
            fanout["clientCpuS"] * 1e6 / fanout["messages"] if fanout["messages"] else None
        ),
        wakeup_p50=by_case["wakeup"]["p50Us"],
        wakeup_p99=by_case["wakeup"]["p99Us"],
        wakeup_p999=by_case["wakeup"]["p999Us"],
        syncflush=by_case["syncsend"]["msgsPerS"],
    )
    return figures


def compare(sizes: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every system of `sizes.systems` `sizes.runs` times, the order rotating; the result
    document (`bench.results.record`) with the summary."""
    systems: list[str] = sizes.systems
    runs: list[dict[str, Figures]] = []
    unwind_on_sigterm()  # before the first load generator starts, which precedes any server
    for run in range(sizes.runs):
        order = systems[run % len(systems) :] + systems[: run % len(systems)]
        figures: dict[str, Figures] = {}
        for system in order:
            figures[system] = one_system(system, sizes, run)
            log(f"run {run + 1}/{sizes.runs} {system}: {json.dumps(figures[system])}")
        runs.append(figures)
    summary = summarize(runs, systems)
    return results.record(
        BENCHMARK,
        sizes=size_settings(sizes),
        settings=settings(systems),
        runs=runs,
        summary=summary,
        page=page(summary, systems, len(runs)),
    )


def peers_of(systems: list[str]) -> list[str]:
    return [s for s in systems if s != LONGBOAT.name]


def summarize(runs: list[dict[str, Figures]], systems: list[str]) -> dict[str, Any]:
    """Per row: each system's median, min and max, and against each peer the median of the
    per-run ratios (Longboat / peer) with the target's verdict.  A figure a run could not
    measure (None, or absent from runs recorded before the row existed) leaves that run out
    of the row's ratio; a row no run measured for both, or one of `NO_RATIO`, has no ratio."""
    summary: dict[str, Any] = {}
    for key, _label, _unit, target in ROWS:
        cells: dict[str, Any] = {}
        for system in systems:
            values = [v for r in runs if (v := r.get(system, {}).get(key)) is not None]
            cells[system] = (
                {"median": statistics.median(values), "min": min(values), "max": max(values)}
                if values
                else None
            )
        against: dict[str, Any] = {}
        for peer in peers_of(systems):
            ratios = [
                _ratio(ours, theirs)
                for r in runs
                if key not in NO_RATIO
                and (ours := r.get(LONGBOAT.name, {}).get(key)) is not None
                and (theirs := r.get(peer, {}).get(key)) is not None
            ]
            ratio = statistics.median(ratios) if ratios else None
            met = None
            if target is not None and ratio is not None:
                op, bound = target
                met = ratio >= bound if op == ">=" else ratio <= bound
            against[peer] = {"ratio": ratio, "ratios": ratios, "met": met}
        summary[key] = {
            "figures": cells,
            "against": against,
            "target": None if target is None else f"{target[0]} {target[1]}",
        }
    return summary


def page(summary: Mapping[str, Any], systems: list[str], runs: int) -> dict[str, Any]:
    """What `bench.report` shows: each target's verdict against each peer, then the steady
    state and the cold start as tables (cells: median and range over the runs)."""
    peers = peers_of(systems)
    targets = [
        {
            "figure": f"{label} ({unit}), Longboat ÷ {peer}",
            "target": f"{row['target']}x",
            "value": ratio_label(row["against"][peer], runs),
            "met": row["against"][peer]["met"],
        }
        for key, label, unit, _target in ROWS
        if (row := summary[key])["target"] is not None
        for peer in peers
    ]
    columns = ["figure", *systems, *(f"÷ {peer}" for peer in peers), "target"]

    def rows(cold: bool) -> list[list[str]]:
        return [
            [
                f"{label} ({unit})",
                *(cell(summary[key]["figures"].get(s)) for s in systems),
                *(
                    f"{ratio_label(a, runs)} {verdict(a['met'])}".strip()
                    for a in (summary[key]["against"][peer] for peer in peers)
                ),
                summary[key]["target"] or "",
            ]
            for key, label, unit, _target in ROWS
            if (key in COLD) == cold
        ]

    return {
        "targets": targets,
        "tables": [
            {"title": "steady state", "columns": columns, "rows": rows(cold=False)},
            {"title": "cold start", "columns": columns, "rows": rows(cold=True)},
        ],
    }


def ratio_label(ratio: Mapping[str, Any], runs: int) -> str:
    """A ratio as printed and drawn, saying how many runs it rests on when some could not
    measure it (a derived CPU figure can be missing, see `summarize`)."""
    if ratio["ratio"] is None:
        return "-"
    label = f"{ratio['ratio']:.2f}x"
    measured = len(ratio["ratios"])
    return label if measured >= runs else f"{label} ({measured} of {runs} runs)"


def verdict(met: bool | None) -> str:
    return "" if met is None else ("met" if met else "missed")


def cell(figure: Mapping[str, float] | None) -> str:
    """A system's figure: median (min-max) over the runs."""
    if figure is None:
        return "not measured"
    digits = 1 if figure["max"] < 100 else 0
    return (
        f"{figure['median']:,.{digits}f} ({figure['min']:,.{digits}f}-{figure['max']:,.{digits}f})"
    )


def _ratio(ours: float, theirs: float) -> float:
    """Longboat / RocketMQ; a RocketMQ figure under one clock tick over the default window (an
    idle broker's CPU, which the kernel counts in ticks) counts as one tick, so two brokers a
    tick apart do not make a ratio of 0.1 to 0."""
    return ours / max(theirs, ONE_TICK_PCT)


def size_settings(sizes: argparse.Namespace) -> dict[str, Any]:
    return {
        "runs": sizes.runs,
        "warmup_s": sizes.warmup,
        "duration_s": sizes.duration,
        "py_drain": sizes.py_drain,
        "parked": sizes.parked,
        "body_bytes": 256,
        "batch": 64,
    }


def settings(systems: list[str]) -> dict[str, Any]:
    return {
        "load generator": "Apache RocketMQ Java client 4.9.8, " + " ".join(LOADGEN_JVM_OPTIONS),
        **{name: SYSTEMS[name].describe() for name in systems},
    }


def report(result: Mapping[str, Any]) -> None:
    """The result as a table on stdout: every system's cell, every peer's ratio and verdict."""
    runs = len(result["runs"])
    systems = list(result["settings"].keys() - {"load generator"})
    systems.sort(key=lambda s: (s != LONGBOAT.name, s))
    for name, value in result["settings"].items():
        print(f"{name}: {value}")
    print()
    print(
        f"{'figure':46}"
        + "".join(f" {s:>24}" for s in systems)
        + "".join(f"  LB/{p}" for p in peers_of(systems))
    )
    for key, label, unit, _target in ROWS:
        row = result["summary"][key]
        ratios = "".join(
            f"  {ratio_label(r, runs)} {verdict(r['met'])}".rstrip()
            for r in row["against"].values()
        )
        print(
            f"{label + ' ' + unit:46}"
            + "".join(f" {cell(row['figures'].get(s)):>24}" for s in systems)
            + f"{ratios}  target {row['target'] or '-'}"
        )
    print("\ncells: median (min-max) over the runs; LB/x: median of the per-run ratios")


def plot(result: Mapping[str, Any], path: Path) -> None:
    """Longboat / each RocketMQ per row on a log axis, the target of each row marked."""
    from longboat.bench.plot import pyplot

    plt = pyplot()
    runs = len(result["runs"])
    rows = [
        (label, unit, result["summary"][key])
        for key, label, unit, _ in ROWS
        if any(r["ratio"] is not None for r in result["summary"][key]["against"].values())
    ]
    peers = sorted({p for _l, _u, row in rows for p in row["against"]})
    height = 0.8 / max(1, len(peers))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) * max(1, len(peers)) ** 0.5 + 1.4))
    for i, (_label, _unit, row) in enumerate(reversed(rows)):
        for j, peer in enumerate(peers):
            against = row["against"].get(peer)
            if against is None or against["ratio"] is None:
                continue
            y = i - 0.4 + height * (j + 0.5)
            ratio = max(against["ratio"], 1e-3)
            colour = {True: "tab:green", False: "tab:red", None: "tab:gray"}[against["met"]]
            ax.barh(y, ratio, height=height * 0.9, color=colour, alpha=1.0 - 0.35 * j)
            ax.text(ratio * 1.05, y, f"{ratio_label(against, runs)} ({peer})", va="center",
                    fontsize=7)  # fmt: skip
        if row["target"]:
            ax.plot([float(row["target"].split()[1])] * 2, [i - 0.4, i + 0.4], "k--", lw=1)
    ax.set_yticks(range(len(rows)), [f"{label} ({unit})" for label, unit, _ in reversed(rows)])
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    ax.set_xlim(low, high * 10)  # room for the labels right of the longest bar
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlabel("Longboat / RocketMQ (median of the runs; dashed: the target)")
    fig.suptitle("Longboat against Apache RocketMQ, same Java load, steady state")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rocketmq_compare", description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before each window")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds each window")
    parser.add_argument(
        "--systems",
        type=lambda text: text.split(","),
        default=None,
        help=f"of {', '.join(SYSTEMS)} [default: those available here]",
    )
    parser.add_argument("--py-drain", type=int, default=200_000, help="Python client's backlog")
    parser.add_argument("--parked", type=int, default=10_000, help="pulls parked at once")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per load generator")
    parser.add_argument(
        "--json", type=Path, default=None, help="where the result goes [bench/results/]"
    )
    parser.add_argument("--plot", type=Path, help="also draw the ratios (PNG) here")
    parser.add_argument(
        "--replot", type=Path, help="no run: summarize, print and draw the runs of this JSON"
    )
    options = parser.parse_args(argv)
    if options.systems is None:
        options.systems = available()
    unknown = set(options.systems) - set(SYSTEMS)
    if unknown or LONGBOAT.name not in options.systems:
        parser.error(f"--systems: longboat and any of {', '.join(SYSTEMS)}")
    return options


def main() -> None:
    options = parse()
    if options.replot:
        result = json.loads(options.replot.read_text())
        systems = sorted(result["runs"][0], key=lambda s: (s != LONGBOAT.name, s))
        result["summary"] = summarize(result["runs"], systems)
        result["page"] = page(result["summary"], systems, len(result["runs"]))
    else:
        result = compare(options)
        print(f"result: {results.save(result, options.json)}")
    report(result)
    if options.plot:
        plot(result, options.plot)


if __name__ == "__main__":
    main()
