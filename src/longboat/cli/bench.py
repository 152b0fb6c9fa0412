"""`longboat bench produce|consume|e2e|wakeup|holds`: load against a running broker.

RocketMQ's benchmark tool's knobs (threads, message size, batch, topic, duration, tags), with
TPS and latency p50/p99/p999/max where RocketMQ prints only mean and max.  The work is in
`longboat.bench.loadgen`; this module parses options and prints.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from longboat.bench import loadgen
from longboat.bench.plot import plot_latencies
from longboat.bench.stats import BenchResult
from longboat.cli.connect import namesrv_option
from longboat.cli.runtime import console, run


def load_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options every case shares (each case's own options go above them)."""
    options = [
        namesrv_option,
        click.option("-t", "--topic", default="", help="Topic [default: a fresh one per run]."),
        click.option("-g", "--group", default="", help="Consumer group [default: a fresh one]."),
        click.option(
            "-w", "--threads", "concurrency", default=1, show_default=True,
            help="Requests in flight at once (RocketMQ's sender threads).",
        ),
        click.option("-s", "--size", default=256, show_default=True, help="Message body bytes."),
        click.option("-b", "--batch", default=1, show_default=True, help="Messages per request."),
        click.option(
            "-d", "--duration", default=10.0, show_default=True, help="Seconds to run at most."
        ),
        click.option(
            "-n", "--messages", default=0, show_default=True,
            help="Messages to move at most (0: until the duration ends).",
        ),
        click.option("--tags", default=None, help="Tag of sent messages / subscription."),
        click.option("--queues", default=4, show_default=True, help="Queues of a new topic."),
        click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON."),
        click.option(
            "--plot",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Write the latency distribution to this PNG.",
        ),
    ]  # fmt: skip
    for option in reversed(options):
        command = option(command)
    return command


def execute(
    kwargs: dict[str, Any],
    doing: str,
    case: Callable[[loadgen.LoadOptions], Coroutine[Any, Any, BenchResult]],
) -> None:
    """Build the options, run the case under a spinner (none under --json), print."""
    as_json = kwargs.pop("as_json")
    plot = kwargs.pop("plot")
    opts = loadgen.LoadOptions(**kwargs)
    with contextlib.nullcontext() if as_json else console.status(doing, spinner="dots"):
        result = run(case(opts))
    report(result, as_json, plot)


def report(result: BenchResult, as_json: bool, plot: Path | None) -> None:
    figures = result.figures()
    if plot is not None:
        plot_latencies([result], plot)
        figures["plot"] = str(plot)
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    table = Table(title=f"longboat bench {result.case}", show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in figures.items():
        if key == "case":
            continue
        if isinstance(value, float):
            text = f"{value:,.1f}" if key.endswith("_us") or key == "tps" else f"{value:,.3f}"
        elif isinstance(value, int):
            text = f"{value:,}"
        else:
            text = str(value)
        table.add_row(key, text)
    console.print(table)


@click.group()
def bench() -> None:
    """Measure a running broker: throughput and latency percentiles.

    Every case uses a fresh topic and group unless -t/-g name them, and stops at --duration
    or --messages, whichever comes first.
    """


def case(command: Callable[..., None]) -> click.Command:
    """A `longboat bench` case: a subcommand with the options every case shares."""
    return bench.command()(load_options(command))


@case
def produce(**kwargs: Any) -> None:
    """Send as fast as --threads requests in flight allow (batches with -b)."""
    execute(kwargs, "producing…", loadgen.produce)


@case
@click.option(
    "--preload", default=20_000, show_default=True, help="Messages stored first (untimed)."
)
def consume(preload: int, **kwargs: Any) -> None:
    """Drain pre-stored messages with one pull loop per queue (-b messages per pull, ≤ 32)."""
    kwargs["batch"] = kwargs["batch"] if kwargs["batch"] > 1 else loadgen.MAX_PULL_BATCH
    execute(kwargs, "consuming…", lambda opts: loadgen.consume(opts, preloaded=preload))


@case
def e2e(**kwargs: Any) -> None:
    """Send for --duration while a push consumer receives: send → listener latency."""
    execute(kwargs, "sending and consuming…", loadgen.e2e)


@case
@click.option("--rounds", default=1000, show_default=True, help="Wake-ups to time.")
def wakeup(rounds: int, **kwargs: Any) -> None:
    """Long-poll wake-up: a pull parked on an idle queue, then one send; send → answer."""
    execute(kwargs, "timing wake-ups…", lambda opts: loadgen.wakeup(opts, rounds=rounds))


@case
@click.option("--count", default=10_000, show_default=True, help="Pulls to park.")
@click.option("--window", default=5.0, show_default=True, help="Seconds of idle sampling.")
@click.option("--pid", type=int, default=None, help="Broker pid [default: found by its port].")
def holds(count: int, window: float, pid: int | None, **kwargs: Any) -> None:
    """Idle cost of parked pulls: broker CPU and RSS per parked pull, then one wake-all."""
    execute(
        kwargs,
        f"parking {count:,} pulls…",
        lambda opts: loadgen.holds(opts, count=count, window_s=window, pid=pid),
    )


COMMANDS = (bench,)
