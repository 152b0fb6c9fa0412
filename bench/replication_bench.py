"""Replication benchmark: produce through a SYNC_MASTER and through an ASYNC_MASTER, each
with one slave, in the same run, and the slave's lag behind an ASYNC_MASTER.

    python -m bench.replication_bench [--runs 3] [--duration 5] [--concurrency 8] [--batch 1]

Each run starts, per role, a name server, a master and a slave, each broker in its own
process (so the slave's copying does not share the master's event loop), on random 127.0.0.1
ports with temporary stores; this process sends with `longboat.bench.loadgen` (Longboat's
producer, `--concurrency` sends in flight, `--batch` messages per send) for `--duration`
seconds.  Printed per role: messages/s, send latency p50/p99, the slave's lag (messages the
master stored that the slave had not dispatched, sampled every 50 ms during the load, the
slave read first so a sample is an upper bound: median and max) and how long the slave took
to catch up after the load stopped.  Medians of `--runs` runs, then SYNC_MASTER ÷
ASYNC_MASTER throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from bench import results
from longboat.bench import loadgen
from longboat.client import ClientConfig
from longboat.client.queue_reader import QueueReader
from longboat.protocol.types import MessageQueue
from longboat.remoting.event_loop import run

GROUP_NAME = "bench-ha"
QUEUES = 4
LAG_SAMPLE_S = 0.05


async def _serve_broker(options: dict[str, Any], ready: Any, stop: Event) -> None:
    from longboat.broker import BrokerConfig, BrokerController

    broker = BrokerController(BrokerConfig(**options))
    await broker.start()
    ready.put(broker.broker_addr)
    await asyncio.get_running_loop().run_in_executor(None, stop.wait)
    await broker.stop()


def _broker_child(options: dict[str, Any], ready: Any, stop: Event) -> None:
    run(_serve_broker(options, ready, stop))


@asynccontextmanager
async def broker_group(role: str, data_dir: Path) -> AsyncIterator[tuple[str, str, str]]:
    """A name server (here) and a master of `role` and a slave (children); yields the name
    server's, the master's and the slave's addresses."""
    from longboat.namesrv import NameServer

    namesrv = NameServer("127.0.0.1", 0)
    await namesrv.start()
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    children = []
    addrs = []
    try:
        for name, broker_role, broker_id in (("master", role, 0), ("slave", "SLAVE", 1)):
            options = {
                "broker_name": GROUP_NAME,
                "broker_role": broker_role,
                "broker_id": broker_id,
                "listen_host": "127.0.0.1",
                "listen_port": 0,
                "broker_ip1": "127.0.0.1",
                "ha_listen_port": 0,
                "namesrv_addr": namesrv.addr,
                "store_path_root_dir": data_dir / name,
                "mapped_file_size_commit_log": 256 * 1024 * 1024,
                "grpc_listen_port": -1,
                "slave_synchronize_interval": 200,
            }
            ready = ctx.Queue()
            child = ctx.Process(target=_broker_child, args=(options, ready, stop), daemon=True)
            child.start()
            children.append(child)
            addrs.append(await asyncio.to_thread(ready.get, True, 60))
        yield namesrv.addr, addrs[0], addrs[1]
    finally:
        stop.set()
        for child in children:
            await asyncio.to_thread(child.join, 30)
        await namesrv.stop()


async def queued(reader: QueueReader, addr: str, topic: str) -> int:
    """Messages the broker at `addr` has dispatched to the topic's queues."""
    total = 0
    for queue_id in range(QUEUES):
        total += await reader.instance.api.get_max_offset(
            addr, MessageQueue(topic, GROUP_NAME, queue_id)
        )
    return total


async def one_role(role: str, args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="longboat-bench-ha-") as data_dir:
        async with broker_group(role, Path(data_dir)) as (namesrv, master, slave):
            opts = loadgen.LoadOptions(
                namesrv=namesrv,
                concurrency=args.concurrency,
                batch=args.batch,
                duration=args.duration,
                queues=QUEUES,
            )
            opts = await loadgen.prepare_topic(opts, "replicated")
            config = ClientConfig([namesrv], client_ip="127.0.0.1")
            lags: list[int] = []
            async with QueueReader(config=config) as reader:
                producing = asyncio.ensure_future(loadgen.produce(replace(opts)))
                while not producing.done():
                    # The slave first: a message stored meanwhile counts as lag, so the
                    # sample is an upper bound, never below the true lag.
                    on_slave = await queued(reader, slave, opts.topic)
                    lags.append(await queued(reader, master, opts.topic) - on_slave)
                    await asyncio.sleep(LAG_SAMPLE_S)
                result = await producing
                stopped = time.perf_counter()
                stored = await queued(reader, master, opts.topic)
                while await queued(reader, slave, opts.topic) < stored:
                    await asyncio.sleep(0.005)
                caught_up_ms = (time.perf_counter() - stopped) * 1000
            figures = result.figures()
            return {
                "tps": float(figures["tps"]),
                "p50_us": float(figures["p50_us"]),
                "p99_us": float(figures["p99_us"]),
                "lag_median_msgs": float(statistics.median(lags)) if lags else 0.0,
                "lag_max_msgs": float(max(lags, default=0)),
                "catch_up_ms": caught_up_ms,
            }


async def bench(args: argparse.Namespace) -> None:
    runs: dict[str, list[dict[str, float]]] = {"SYNC_MASTER": [], "ASYNC_MASTER": []}
    for i in range(args.runs):
        print(f"run {i + 1}/{args.runs}", flush=True)
        for role in runs:  # interleaved: both roles see the same machine
            figures = await one_role(role, args)
            runs[role].append(figures)
            shown = ", ".join(f"{k} {v:,.1f}" for k, v in figures.items())
            print(f"  {role:<13} {shown}", flush=True)
    print(f"\nmedians of {args.runs} runs", flush=True)
    medians = {
        role: {k: statistics.median(r[k] for r in results) for k in results[0]}
        for role, results in runs.items()
    }
    for role, figures in medians.items():
        shown = ", ".join(f"{k} {v:,.1f}" for k, v in figures.items())
        print(f"  {role:<13} {shown}", flush=True)
    ratio = medians["SYNC_MASTER"]["tps"] / medians["ASYNC_MASTER"]["tps"]
    print(f"SYNC_MASTER / ASYNC_MASTER produce: {ratio:.2f}x", flush=True)
    keys = list(next(iter(medians.values())))
    page = {
        "targets": [],
        "tables": [
            {"title": f"medians of {args.runs} runs", "columns": ["role", *keys],
             "rows": [[role, *(f"{f[k]:,.1f}" for k in keys)] for role, f in medians.items()]},
            {"title": "comparison", "columns": ["SYNC_MASTER / ASYNC_MASTER produce"],
             "rows": [[f"{ratio:.2f}x"]]},
        ],
    }  # fmt: skip
    sizes = {k: v for k, v in vars(args).items() if k != "json"}
    result = results.record("replication_bench", sizes=sizes, runs=[runs], page=page)
    print(f"result: {results.save(result, args.json)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per role")
    parser.add_argument("--concurrency", type=int, default=8, help="sends in flight")
    parser.add_argument("--batch", type=int, default=1, help="messages per send")
    results.add_json_option(parser, "replication_bench")
    run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
