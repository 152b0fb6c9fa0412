"""`longboat demo`: the order pipeline of `longboat.demo` end to end, with progress on screen.

Starts `longboat up` (unless --namesrv points at a running one), produces order events,
runs the streaming job (per-minute revenue by region → Parquet, large-order alerts → a topic,
exactly once) until it has caught up, then the batch job over a store-time range, and shows
what each produced.  The pipeline itself is `longboat.demo` (an installed wheel carries it;
the repository's `examples/` run its pieces one by one); this module only drives and shows it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from longboat.cli.render import format_progress
from longboat.cli.runtime import console

ORDERS_TOPIC = "demo-orders"
ALERTS_TOPIC = "demo-order-alerts"


@dataclass(frozen=True, slots=True)
class DemoResult:
    orders: int
    large_orders: int
    alerts: int
    revenue_rows: int
    revenue_orders: int
    range_orders: int
    range_expected: int


def run_demo(
    spark: Any, namesrv: str, workdir: Path, *, orders: int = 5000, max_per_trigger: int = 2000
) -> DemoResult:
    """The whole pipeline against `namesrv` with `spark`; outputs under `workdir`."""
    # The jobs import pyspark: loaded here, so the CLI starts without the spark extra.
    from longboat.client import ClientConfig
    from longboat.client.sync import Admin
    from longboat.demo import orders_by_time as batch_mod
    from longboat.demo import revenue_stream as stream_mod
    from longboat.demo.orders import produce_orders

    with Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin:
        admin.create_topic(ORDERS_TOPIC, queue_nums=4)
        admin.create_topic(ALERTS_TOPIC, queue_nums=2)

    with _progress() as progress:
        task = progress.add_task("producing order events", total=orders)
        t_start = int(time.time() * 1000)
        half = orders // 2
        first = produce_orders(
            namesrv, ORDERS_TOPIC, half, on_progress=lambda n: progress.advance(task, n)
        )
        time.sleep(0.01)
        t_half = int(time.time() * 1000)
        time.sleep(0.01)
        rest = produce_orders(
            namesrv,
            ORDERS_TOPIC,
            orders - half,
            seed=8,
            on_progress=lambda n: progress.advance(task, n),
        )
    events = first + rest
    large = sum(1 for e in events if e["amount"] >= stream_mod.LARGE_ORDER)
    console.print(f"[green]✓[/] {orders} order events in {ORDERS_TOPIC} ({large} large)")

    queries = stream_mod.start_pipeline(
        spark, namesrv, ORDERS_TOPIC, ALERTS_TOPIC, workdir, max_per_trigger=max_per_trigger
    )
    with _progress() as progress:
        tasks = {
            q.name: progress.add_task(f"streaming job: {q.name}", total=orders) for q in queries
        }
        while any(q.isActive for q in queries):
            for q in queries:
                done = sum(p["numInputRows"] for p in q.recentProgress)
                progress.update(tasks[q.name], completed=min(done, orders))
            time.sleep(0.2)
        for q in queries:
            if q.exception() is not None:
                raise click.ClickException(f"streaming query {q.name} failed: {q.exception()}")
            progress.update(tasks[q.name], completed=orders)

    revenue = spark.read.parquet(str(workdir / "revenue")).orderBy("minute", "region")
    rows = revenue.collect()
    table = Table(title="revenue per minute and region (closed windows, Parquet)")
    for column in ("minute", "region", "orders", "revenue"):
        table.add_column(column, justify="right" if column in ("orders", "revenue") else "left")
    for r in rows[-12:]:
        table.add_row(r.minute.strftime("%H:%M"), r.region, str(r.orders), f"{r.revenue:,.2f}")
    console.print(table)

    with Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin:
        progress_rows = admin.group_progress(stream_mod.PROGRESS_GROUP, ORDERS_TOPIC)
    table = Table(
        title=f"consumer group {stream_mod.PROGRESS_GROUP} (the streaming job's progress)"
    )
    for column in ("queue", "broker offset", "group offset", "lag"):
        table.add_column(column, justify="left" if column == "queue" else "right")
    for p in progress_rows:
        table.add_row(
            f"{p.mq.broker_name}:{p.mq.queue_id}",
            str(p.broker_offset),
            *format_progress(p.consumer_offset, p.lag),
        )
    console.print(table)
    console.print(
        "[dim]Spark confirms a micro-batch to its source when it plans the next one, so the "
        "group trails the job by its last micro-batch.[/]"
    )

    alerts = (
        spark.read.format("longboat")
        .option("namesrv", namesrv)
        .option("topic", ALERTS_TOPIC)
        .load()
        .count()
    )
    console.print(f"[green]✓[/] {alerts} large-order alerts in {ALERTS_TOPIC} (expected {large})")

    by_region = batch_mod.revenue_by_region(
        batch_mod.orders_between(spark, namesrv, ORDERS_TOPIC, t_start, t_half)
    ).collect()
    table = Table(title="batch job: orders stored in the first half of the run")
    for column in ("region", "orders", "revenue"):
        table.add_column(column, justify="left" if column == "region" else "right")
    for r in by_region:
        table.add_row(r.region, str(r.orders), f"{r.revenue:,.2f}")
    console.print(table)
    return DemoResult(
        orders=orders,
        large_orders=large,
        alerts=alerts,
        revenue_rows=len(rows),
        revenue_orders=sum(r.orders for r in rows),
        range_orders=sum(r.orders for r in by_region),
        range_expected=half,
    )


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def longboat_up(data: Path) -> Iterator[str]:
    """`longboat up` in a child process on free loopback ports, with no endpoint the demo does
    not use (metrics, gRPC, dashboard), so it runs beside a `make up`; its name-server
    address.  The broker takes any free port (0): a port picked here could have its
    replication neighbour (+1) taken."""
    namesrv_port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "longboat.cli",
        "up",
        "--data",
        str(data),
        "--namesrv-port",
        str(namesrv_port),
        "--broker-port",
        "0",
        "--metrics-port",
        "0",
        "--grpc-port",
        "-1",
        "--dashboard-port",
        "-1",
    ]
    log_path = data.parent / "longboat-up.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    addr = f"127.0.0.1:{namesrv_port}"
    try:
        _wait_for_broker(addr, proc, log_path)
        yield addr
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def _wait_for_broker(namesrv: str, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    from longboat.client import ClientConfig
    from longboat.client.sync import Admin

    deadline = time.monotonic() + 30
    with Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                lines = log_path.read_text(errors="replace").strip().splitlines()
                raise click.ClickException(
                    f"longboat up exited: {lines[-1] if lines else 'no output'} ({log_path})"
                )
            with contextlib.suppress(Exception):
                if admin.master_brokers():
                    return
            time.sleep(0.2)
    raise click.ClickException("longboat up did not register a broker within 30 s")


def spark_session() -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[2]")
        .appName("longboat-demo")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


@click.command()
@click.option("--namesrv", help="Use a running name server instead of starting `longboat up`.")
@click.option("--orders", default=5000, show_default=True, help="Order events to produce.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where outputs and checkpoints go [default: a new temporary directory].",
)
def demo(namesrv: str | None, orders: int, workdir: Path | None) -> None:
    """Run the order pipeline (longboat.demo) end to end on a local Spark."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="longboat-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    console.print(f"[bold]longboat demo[/] — outputs in {workdir}")
    with contextlib.ExitStack() as stack:
        if namesrv is None:
            with console.status("starting longboat up"):
                namesrv = stack.enter_context(longboat_up(workdir / "store"))
            console.print(f"[green]✓[/] longboat up: name server {namesrv}")
        with console.status("starting Spark (local[2])"):
            spark = spark_session()
        stack.callback(spark.stop)
        result = run_demo(spark, namesrv, workdir, orders=orders)
    ok = result.alerts == result.large_orders and result.range_orders == result.range_expected
    console.print(
        f"[bold]{'done' if ok else 'MISMATCH'}[/]: {result.orders} orders, "
        f"{result.revenue_orders} in closed revenue windows, {result.alerts} alerts"
    )


COMMANDS = (demo,)
