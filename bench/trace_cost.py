"""What writing message traces costs a producer: send throughput with and without
`enable_trace=True`.

    python -m bench.trace_cost [--messages 3000] [--runs 7] [--in-flight 1,32] [--json FILE]

A name server and broker run in a child process (`longboat up` on free loopback ports, a
temporary data directory), so their CPU is not this process's.  Each case sends
`--messages` 256-byte messages to a 4-queue topic, with `--in-flight` sends outstanding
(1: one sync send after another); traced and untraced runs alternate, `--runs` of each, and
the median rate of each is reported with their ratio, and the median CPU time this
process spent per message (the client's own cost, less swayed by other load on the
machine).  The traced producer's records go to the same broker (a trace topic of its own),
as they would in production: their sends are part of the cost measured.  The target: traced
sends keep at least 95 % of the untraced throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import results
from longboat.client import ClientConfig, Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer

BODY = b"x" * 256
QUEUES = 4
START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def servers() -> Iterator[str]:
    """`longboat up` in a child process; its name server's address."""
    with tempfile.TemporaryDirectory() as home:
        log_path = Path(home) / "longboat.log"
        namesrv_port = free_port()
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "longboat.cli", "up", "--data", f"{home}/store",
                 "--namesrv-port", str(namesrv_port), "--broker-port", "0",
                 "--metrics-port", "0", "--grpc-port", "-1", "--dashboard-port", "-1"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + START_TIMEOUT_S
                while b"Ctrl-C stops" not in log_path.read_bytes():
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(log_path.read_text(errors="replace"))
                    time.sleep(0.05)
                yield f"127.0.0.1:{namesrv_port}"
            finally:
                os.kill(proc.pid, signal.SIGTERM)
                proc.wait(30)


def config(namesrv: str, name: str) -> ClientConfig:
    return ClientConfig([namesrv], client_ip="127.0.0.1", instance_name=name)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def send_rate(
    namesrv: str, topic: str, messages: int, in_flight: int, traced: bool
) -> tuple[float, float]:
    """Messages per second of one producer sending `messages` with `in_flight` outstanding,
    and this process's CPU microseconds per message (steadier than the rate on a busy
    machine; the trace writer's flushes run in this process too)."""
    name = f"bench-{'traced' if traced else 'plain'}-{time.monotonic_ns()}"
    producer = Producer(
        "trace_cost_pg", config=config(namesrv, name), enable_trace=traced,
        trace_topic="TraceCostTraces",
    )  # fmt: skip
    async with producer:
        await producer.send(Message(topic, BODY))  # routes known before the clock starts
        started, cpu = time.perf_counter(), cpu_seconds()
        for first in range(0, messages, in_flight):
            window = range(first, min(messages, first + in_flight))
            await asyncio.gather(*(producer.send(Message(topic, BODY)) for _ in window))
        await producer.shutdown()  # the last trace records are written inside the measure
        elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    return messages / elapsed, cpu / messages * 1e6


async def measure(namesrv: str, args: argparse.Namespace) -> dict[str, Any]:
    topic = "TraceCost"
    async with Admin(config=config(namesrv, "bench-admin")) as admin:
        await admin.create_topic(topic, queue_nums=QUEUES)
        await admin.create_topic("TraceCostTraces", queue_nums=1)
    cases = {}
    for in_flight in args.in_flight:
        rates: dict[str, list[float]] = {"plain": [], "traced": []}
        cpus: dict[str, list[float]] = {"plain": [], "traced": []}
        for _ in range(args.runs):
            for traced in (False, True):
                rate, cpu_us = await send_rate(namesrv, topic, args.messages, in_flight, traced)
                rates["traced" if traced else "plain"].append(rate)
                cpus["traced" if traced else "plain"].append(cpu_us)
        plain, traced_rate = (statistics.median(rates[k]) for k in ("plain", "traced"))
        plain_cpu, traced_cpu = (statistics.median(cpus[k]) for k in ("plain", "traced"))
        cases[f"in_flight_{in_flight}"] = {
            "plain_msgs_per_s": round(plain),
            "traced_msgs_per_s": round(traced_rate),
            "traced_over_plain": round(traced_rate / plain, 3),
            "plain_cpu_us_per_msg": round(plain_cpu, 1),
            "traced_cpu_us_per_msg": round(traced_cpu, 1),
            "runs": {k: [round(r) for r in v] for k, v in rates.items()},
        }
        print(f"in flight {in_flight}: {cases[f'in_flight_{in_flight}']}", file=sys.stderr)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--in-flight", type=lambda s: [int(x) for x in s.split(",")], default=[1, 32]
    )
    results.add_json_option(parser, "trace_cost")
    args = parser.parse_args()
    with servers() as namesrv:
        cases = asyncio.run(measure(namesrv, args))
    page = results.Page()
    page.table(
        "send throughput and this process's CPU per message, medians",
        ["sends in flight", "untraced msgs/s", "traced msgs/s", "traced / untraced",
         "CPU us/msg untraced", "CPU us/msg traced"],
        ["---:"] * 6,
    )  # fmt: skip
    for in_flight in args.in_flight:
        c = cases[f"in_flight_{in_flight}"]
        page.row(
            in_flight, f"{c['plain_msgs_per_s']:,}", f"{c['traced_msgs_per_s']:,}",
            f"{c['traced_over_plain']:.2f}x", c["plain_cpu_us_per_msg"], c["traced_cpu_us_per_msg"],
        )  # fmt: skip
        page.target(
            f"traced send throughput, {in_flight} in flight",
            ">= 0.95x untraced",
            f"{c['traced_over_plain']:.2f}x",
            c["traced_over_plain"] >= 0.95,
        )
    result = results.record(
        "trace_cost",
        sizes={"messages": args.messages, "runs": args.runs, "body_bytes": len(BODY)},
        runs=[{"in_flight": k, **v["runs"]} for k, v in cases.items()],
        summary=cases,
        page=page.as_dict(),
    )
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
