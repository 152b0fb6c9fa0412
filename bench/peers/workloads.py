"""The workloads, orchestrated from the runner: start role processes, coordinate them, and
turn their raw results into figures. One process per client role, so the producer's and the
consumers' Python work never share an interpreter."""

from __future__ import annotations

import multiprocessing as mp
import queue
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.peers.base import System
from bench.peers.child import role_main
from bench.peers.procs import Sample, sample
from bench.peers.stats import latency_figures

_ctx = mp.get_context("spawn")


@dataclass(frozen=True)
class Sizes:
    """Workload sizes and limits; the defaults are the README run's."""

    rounds: int = 1000
    warmup: int = 20
    settle_s: float = 0.002
    body_size: int = 256
    # The produce workloads: each runs `warmup_s` on its connection, then a timed window.
    warmup_s: float = 3.0
    duration_s: float = 10.0
    produce_batch: int = 64
    fanout_messages: int = 50_000
    fanout_groups: int = 4
    fanout_batch: int = 32
    parked: int = 1000
    idle_window_s: float = 5.0
    time_limit_s: float = 120.0


class Roles:
    """Role processes of one workload run; always reaped, however the run ends."""

    def __init__(self, system: System, sizes: Sizes) -> None:
        self.system = system
        self.sizes = sizes
        self.results: Any = _ctx.Queue()
        self.procs: dict[str, Any] = {}

    def __enter__(self) -> Roles:
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs.values():
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()

    def start(self, tag: str, role: str, **kwargs: Any) -> None:
        kwargs.setdefault("time_limit_s", self.sizes.time_limit_s)
        p = _ctx.Process(
            target=role_main,
            args=(tag, role, self.system.client_path, self.system.endpoint(), kwargs, self.results),
            name=f"{self.system.name}-{tag}",
            daemon=True,
        )
        p.start()
        self.procs[tag] = p

    def collect(self, tags: list[str]) -> dict[str, dict[str, Any]]:
        """Wait for each tag's result, up to the time limit plus slack; raise on any error."""
        deadline = time.monotonic() + self.sizes.time_limit_s + 60.0
        out: dict[str, dict[str, Any]] = {}
        while len(out) < len(tags):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"roles did not finish: {sorted(set(tags) - set(out))}")
            try:
                tag, status, value = self.results.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                dead = [t for t in tags if t not in out and not self.procs[t].is_alive()]
                if dead and self.results.empty():
                    time.sleep(0.5)
                    if self.results.empty():
                        raise RuntimeError(f"role process died without a result: {dead}") from None
                continue
            if status != "ok":
                raise RuntimeError(f"role {tag} failed:\n{value}")
            out[tag] = value
        return out


def _stream(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def wakeup(system: System, sizes: Sizes) -> dict[str, Any]:
    """Send -> receive latency of one message into an idle stream with a parked reader."""
    stream = _stream("wk")
    ready = _ctx.Queue()
    common = {"stream": stream, "rounds": sizes.rounds, "warmup": sizes.warmup, "ready": ready}
    with Roles(system, sizes) as roles:
        roles.start("consumer", "wakeup_consumer", block_s=10.0, **common)
        roles.start(
            "producer",
            "wakeup_producer",
            body_size=sizes.body_size,
            settle_s=sizes.settle_s,
            **common,
        )
        res = roles.collect(["consumer", "producer"])
    lat = res["consumer"]["latencies_us"]
    if not lat:
        raise RuntimeError("no wake-up latency measured")
    return {**latency_figures(lat), "rounds": len(lat), "sent": res["producer"]["sent"]}


def produce_batch(system: System, sizes: Sizes) -> dict[str, Any]:
    """Batched produce throughput from one producer process, and the server's and the
    producer's CPU per message."""
    return {**_produce_for(system, sizes, "pb", single=False), "batch": sizes.produce_batch}


def produce_single(system: System, sizes: Sizes) -> dict[str, Any]:
    """One producer sending one message at a time, each awaited: the per-request cost."""
    return _produce_for(system, sizes, "ps", single=True)


def _produce_for(system: System, sizes: Sizes, prefix: str, *, single: bool) -> dict[str, Any]:
    """A producer's window of `duration_s` after `warmup_s` on the same connection; the
    server's CPU is read at the window's edges, which the producer announces."""
    pid = system.server_pid()
    window = _ctx.Queue()
    with Roles(system, sizes) as roles:
        roles.start(
            "producer",
            "produce_for",
            stream=_stream(prefix),
            warmup_s=sizes.warmup_s,
            duration_s=sizes.duration_s,
            batch=1 if single else sizes.produce_batch,
            body_size=sizes.body_size,
            single=single,
            window=window,
        )
        wait = sizes.warmup_s + sizes.duration_s + sizes.time_limit_s
        if window.get(timeout=wait) != "open":
            raise RuntimeError("the producer did not open its window")
        before = sample(pid)
        if window.get(timeout=wait) != "close":
            raise RuntimeError("the producer did not close its window")
        after = sample(pid)
        res = roles.collect(["producer"])["producer"]
    return {
        "msgs_per_s": res["messages"] / res["seconds"],
        **_cpu_per_message(before, after, res["cpu_s"], res["messages"]),
        "messages": res["messages"],
        "seconds": res["seconds"],
    }


def _cpu_per_message(
    before: Sample, after: Sample, client_cpu_s: float, messages: int
) -> dict[str, float]:
    """The server's CPU between two samples and the client processes' own, per message."""
    messages = max(1, messages)
    return {
        "server_cpu_us_per_msg": 1e6 * (after.cpu_s - before.cpu_s) / messages,
        "client_cpu_us_per_msg": 1e6 * client_cpu_s / messages,
    }


#: The second fan-out row's read size: what Redis and JetStream users set for throughput.
#: (RocketMQ's brokers cap a pull at 32 messages by default, the first row's size.)
LARGE_FANOUT_BATCH = 1000


def consume_fanout(system: System, sizes: Sizes) -> dict[str, Any]:
    """Pre-load, then ``fanout_groups`` consumer processes (one group each) read it all, in
    reads of ``fanout_batch``."""
    return _fanout(system, sizes, sizes.fanout_batch)


def consume_fanout_1000(system: System, sizes: Sizes) -> dict[str, Any]:
    """`consume_fanout` in reads of ``LARGE_FANOUT_BATCH``."""
    return _fanout(system, sizes, LARGE_FANOUT_BATCH)


def _fanout(system: System, sizes: Sizes, batch: int) -> dict[str, Any]:
    """Also the CPU each message costs, split between the server (sampled from the moment
    every group is ready until the last one is done) and the consumer processes (each its
    own CPU over its reads).  On a machine with fewer cores than processes, their sum, not
    either alone, bounds the aggregate rate."""
    pid = system.server_pid()
    stream = _stream("fo")
    groups = tuple(f"g{i}" for i in range(sizes.fanout_groups))
    with Roles(system, sizes) as roles:
        roles.start(
            "preload",
            "produce",
            stream=stream,
            messages=sizes.fanout_messages,
            batch=sizes.produce_batch,
            body_size=sizes.body_size,
            groups=groups,
            delete=False,
        )
        loaded = roles.collect(["preload"])["preload"]["messages"]
        ready, go = _ctx.Queue(), _ctx.Event()
        for g in groups:
            roles.start(
                g,
                "drain",
                stream=stream,
                group=g,
                messages=loaded,
                batch=batch,
                block_s=2.0,
                ready=ready,
                go=go,
            )
        try:
            for _ in groups:
                ready.get(timeout=sizes.time_limit_s)
            before = sample(pid)
            go.set()
            res = roles.collect(list(groups))
            after = sample(pid)
        finally:
            go.set()
            _cleanup(system, sizes, stream)
    counts = [res[g]["messages"] for g in groups]
    rates = [res[g]["messages"] / ((res[g]["end_ns"] - res[g]["start_ns"]) / 1e9) for g in groups]
    span_s = (
        max(r["end_ns"] for r in res.values()) - min(r["start_ns"] for r in res.values())
    ) / 1e9
    consumers_cpu_s = sum(res[g]["cpu_s"] for g in groups)
    return {
        "group_median_msgs_per_s": statistics.median(rates),
        "aggregate_msgs_per_s": sum(counts) / span_s,
        **_cpu_per_message(before, after, consumers_cpu_s, sum(counts)),
        "per_group_msgs_per_s": rates,
        "messages_per_group": counts,
        "preloaded": loaded,
        "batch": batch,
    }


def _cleanup(system: System, sizes: Sizes, stream: str) -> None:
    """Delete a stream left by a workload, from a short-lived role process."""
    with Roles(system, sizes) as roles:
        roles.start(
            "cleanup", "produce", stream=stream, messages=0, batch=1, body_size=0, create=False
        )
        roles.collect(["cleanup"])


def parked(system: System, sizes: Sizes) -> dict[str, Any]:
    """Server CPU and RSS cost of ``parked`` blocking reads held open over an idle window."""
    status, go, release = _ctx.Queue(), _ctx.Event(), _ctx.Event()
    hold_s = sizes.idle_window_s + 30.0
    pid = system.server_pid()
    with Roles(system, sizes) as roles:
        roles.start(
            "client",
            "park",
            stream=_stream("pk"),
            parked=sizes.parked,
            hold_s=hold_s,
            settle_s=1.0,
            status=status,
            go=go,
            release=release,
        )
        try:
            if status.get(timeout=sizes.time_limit_s) != "created":
                raise RuntimeError("park role did not create its groups")
            time.sleep(0.5)
            before = sample(pid)
            go.set()
            if status.get(timeout=sizes.time_limit_s) != "parked":
                raise RuntimeError("park role did not park")
            start = sample(pid)
            time.sleep(sizes.idle_window_s)
            end = sample(pid)
        finally:
            go.set()
            release.set()
        res = roles.collect(["client"])["client"]
    n = max(1, res["parked"])
    return {
        "cpu_pct": 100.0 * (end.cpu_s - start.cpu_s) / (end.at - start.at),
        "rss_bytes_per_poll": (end.rss - before.rss) / n,
        "parked": res["parked"],
        "returned_early": res["returned_early"],
        "window_s": round(end.at - start.at, 3),
    }


#: Workloads measured on a freshly restarted server: ``parked`` reads RSS deltas, which memory
#: freed by earlier workloads (and returned to the OS lazily by the allocator) would swamp.
FRESH_SERVER: frozenset[str] = frozenset({"parked"})

WORKLOADS: dict[str, Callable[[System, Sizes], dict[str, Any]]] = {
    "wakeup": wakeup,
    "produce_single": produce_single,
    "produce_batch": produce_batch,
    "consume_fanout": consume_fanout,
    "consume_fanout_1000": consume_fanout_1000,
    "parked": parked,
}
