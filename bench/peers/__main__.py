"""``python -m bench.peers``: the side-by-side peer benchmark runner."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from bench import results
from bench.peers.registry import SYSTEMS
from bench.peers.report import page, plot_report, print_report
from bench.peers.runner import run_bench
from bench.peers.workloads import WORKLOADS, Sizes


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def main(argv: list[str] | None = None) -> int:
    d = Sizes()
    ap = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    ap.add_argument("--systems", type=_csv, default=list(SYSTEMS), help="comma list")
    ap.add_argument("--workloads", type=_csv, default=list(WORKLOADS), help="comma list")
    ap.add_argument("--rounds", type=int, default=d.rounds, help="wakeup rounds")
    ap.add_argument("--runs", type=int, default=3, help="runs per workload and system")
    ap.add_argument("--parked", type=int, default=d.parked, help="K parked polls")
    ap.add_argument("--idle-window", type=float, default=d.idle_window_s, help="seconds")
    ap.add_argument("--warmup", type=float, default=d.warmup_s, help="produce warm-up, seconds")
    ap.add_argument("--duration", type=float, default=d.duration_s, help="produce window, s")
    ap.add_argument("--produce-batch", type=int, default=d.produce_batch)
    ap.add_argument("--fanout-messages", type=int, default=d.fanout_messages)
    ap.add_argument("--time-limit", type=float, default=d.time_limit_s, help="per role, seconds")
    ap.add_argument("--json", type=Path, help="output file [bench/results/peers.json]")
    ap.add_argument("--install", action="store_true", help="apt-get missing server binaries")
    ap.add_argument("--plot", type=Path, help="also draw the medians side by side (PNG)")
    ap.add_argument(
        "--replot", type=Path, metavar="JSON", help="only draw --plot from an earlier --json"
    )
    args = ap.parse_args(argv)
    if args.replot is not None:
        if args.plot is None:
            ap.error("--replot needs --plot")
        print(f"wrote {plot_report(json.loads(args.replot.read_text()), args.plot)}")
        return 0
    # SIGTERM becomes SystemExit so the runner's finally blocks stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = Sizes(
        rounds=args.rounds,
        parked=args.parked,
        idle_window_s=args.idle_window,
        warmup_s=args.warmup,
        duration_s=args.duration,
        produce_batch=args.produce_batch,
        fanout_messages=args.fanout_messages,
        time_limit_s=args.time_limit,
    )
    environment = results.environment()
    doc = run_bench(args.systems, args.workloads, sizes, args.runs, install=args.install)
    doc["command"] = " ".join(["python -m bench.peers", *(sys.argv[1:] if argv is None else argv)])
    doc = {"format": results.FORMAT, "benchmark": "peers", "environment": environment, **doc}
    written = results.save({**doc, "page": page(doc)}, args.json)
    print_report(doc)
    print(f"wrote {written}")
    if args.plot is not None:
        print(f"wrote {plot_report(doc, args.plot)}")
    return 1 if doc["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
