"""What a second broker process buys on one host: `longboat up` with 1 and 2 broker groups, each
group in its own process, under the same Java load.

    python -m bench.broker_processes [--runs 2] [--warmup 3] [--duration 10] [--json PATH]

Each run starts `longboat up --brokers N` for N = 1 and 2 in turn (the order alternating between
runs, so the host's other work falls on both alike), each with a fresh store, and drives it with
the `Bench` JVM of `bench.rocketmq_compare` (RocketMQ's 4.9.8 Java client): batched produce (4
threads x 64 x 256 B) and 8 threads of sync single sends, each `--warmup` seconds then timed
over `--duration` seconds, the servers' CPU time (the name server's process and every broker's)
read at the window's edges; and the servers' RSS when idle after start.  The producers spread
over every broker's queues, as RocketMQ's client does over broker groups.

The figures are each N's median over the runs and the 2-process figure over the 1-process one:
throughput is what the host's cores together take, CPU per message what the extra process
costs.  Figures go to `bench/results/broker_processes.json` (`--json` elsewhere).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import results
from bench.compare_systems import start_longboat
from bench.rocketmq_compare import IDLE_S, WRITERS, java_cases, per_message_us, rss_mib
from peers.rocketmq import broker_port

BENCHMARK = "broker_processes"
PROCESSES = (1, 2)
# (key, label, how printed)
FIGURES = (
    ("batch", "batched produce, msgs/s", "{:,.0f}"),
    ("cpu_batch", "server CPU µs per message, batched", "{:.1f}"),
    ("writers", f"sync produce, {WRITERS} threads, msgs/s", "{:,.0f}"),
    ("cpu_writers", f"server CPU µs per message, {WRITERS} threads", "{:.1f}"),
    ("idle_rss", "idle RSS, MiB", "{:.0f}"),
)


def one(processes: int, sizes: argparse.Namespace, run: int) -> dict[str, float | None]:
    """`longboat up --brokers processes` under the batched and the 8-writer loads."""
    with tempfile.TemporaryDirectory(prefix=f"procs-{processes}-") as home:
        running = start_longboat(
            Path(home), broker_port(), broker_port(), "ASYNC_FLUSH", brokers=processes
        )
        try:
            time.sleep(IDLE_S)
            idle = rss_mib(running.pids)
            name = f"longboat x{processes}"
            batch = java_cases(name, running, sizes, run, "batch")["batch"]
            writers = java_cases(name, running, sizes, run, "syncsend", producers=WRITERS)
        finally:
            running.stop()
    return {
        "processes": processes,
        "batch": batch["msgsPerS"],
        "cpu_batch": per_message_us(batch),
        "writers": writers["syncsend"]["msgsPerS"],
        "cpu_writers": per_message_us(writers["syncsend"]),
        "idle_rss": idle,
    }


def median(runs: Sequence[dict[str, Any]], processes: int, key: str) -> float | None:
    values = [r[key] for r in runs if r["processes"] == processes and r[key] is not None]
    return statistics.median(values) if values else None


def page(runs: Sequence[dict[str, Any]]) -> results.Page:
    out = results.Page()
    count = len(runs) // len(PROCESSES)
    out.table(
        f"longboat up, 1 and 2 broker processes (median of {count} runs)",
        ["figure", "1 process", "2 processes", "2 / 1"],
    )
    for key, label, spelled in FIGURES:
        one_p, two_p = median(runs, 1, key), median(runs, 2, key)
        ratio = f"{two_p / one_p:.2f}x" if one_p and two_p else "—"
        out.row(
            label,
            spelled.format(one_p) if one_p is not None else "—",
            spelled.format(two_p) if two_p is not None else "—",
            ratio,
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.broker_processes", description=__doc__)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before each window")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds each window")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per load generator")
    results.add_json_option(parser, BENCHMARK)
    sizes = parser.parse_args(argv)
    runs = []
    for run in range(sizes.runs):
        for processes in PROCESSES if run % 2 == 0 else reversed(PROCESSES):
            runs.append(one(processes, sizes, run))
            print(runs[-1], flush=True)
    document = results.record(
        BENCHMARK,
        sizes={"runs": sizes.runs, "warmup_s": sizes.warmup, "duration_s": sizes.duration},
        runs=runs,
        page=page(runs).as_dict(),
    )
    print(f"wrote {results.save(document, sizes.json)}")


if __name__ == "__main__":
    main()
