"""Workload roles: async functions run inside a role process against a ``Client``.

Each role is written once for all systems. Every loop is bounded by a count or a duration and
by ``time_limit_s``; timestamps that cross processes use ``time.monotonic_ns`` (CLOCK_MONOTONIC,
system-wide on Linux) carried in the first 8 bytes of the body.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.peers.base import Client, Fetched

Role = Callable[..., Awaitable[dict[str, Any]]]


def _stamp(body_size: int) -> bytes:
    return time.monotonic_ns().to_bytes(8, "little") + b"x" * max(0, body_size - 8)


async def _wait(q: Any, timeout_s: float) -> Any:
    """Block on a multiprocessing queue without blocking the event loop."""
    return await asyncio.to_thread(q.get, True, max(0.001, timeout_s))


async def _wait_event(event: Any, timeout_s: float) -> bool:
    return bool(await asyncio.to_thread(event.wait, max(0.001, timeout_s)))


async def wakeup_consumer(
    client: Client,
    *,
    stream: str,
    rounds: int,
    warmup: int,
    block_s: float,
    ready: Any,
    time_limit_s: float,
) -> dict[str, Any]:
    """Park one blocking read per round, tell the producer, and time the wake-up."""
    await client.create_stream(stream, ["g"])
    deadline = time.monotonic() + time_limit_s
    latencies: list[float] = []
    try:
        for i in range(warmup + rounds):
            if time.monotonic() >= deadline:
                break
            task = asyncio.create_task(client.fetch(stream, "g", "c", 1, block_s))
            for _ in range(3):  # let the request reach the socket before saying "parked"
                await asyncio.sleep(0)
            ready.put(i)
            fetched: Fetched = await task
            while not fetched.bodies and time.monotonic() < deadline:
                fetched = await client.fetch(stream, "g", "c", 1, block_s)
            received = time.monotonic_ns()
            if not fetched.bodies:
                break
            await client.ack(stream, "g", fetched)
            if i >= warmup:
                sent = int.from_bytes(fetched.bodies[0][:8], "little")
                latencies.append((received - sent) / 1000.0)
    finally:
        ready.put(None)
        await client.delete_stream(stream)
    return {"latencies_us": latencies}


async def wakeup_producer(
    client: Client,
    *,
    stream: str,
    rounds: int,
    warmup: int,
    body_size: int,
    settle_s: float,
    ready: Any,
    time_limit_s: float,
) -> dict[str, Any]:
    """Wait until the consumer is parked, give the request ``settle_s`` to land, send one."""
    deadline = time.monotonic() + time_limit_s
    sent = 0
    for _ in range(warmup + rounds):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            token = await _wait(ready, min(remaining, 30.0))
        except queue.Empty:
            break
        if token is None:
            break
        await asyncio.sleep(settle_s)
        await client.send(stream, _stamp(body_size))
        sent += 1
    return {"sent": sent}


async def produce(
    client: Client,
    *,
    stream: str,
    messages: int,
    batch: int,
    body_size: int,
    time_limit_s: float,
    groups: tuple[str, ...] = (),
    create: bool = True,
    delete: bool = True,
    single: bool = False,
) -> dict[str, Any]:
    """Send ``messages`` in batches as fast as acks come back (``single``: one ``send`` at a
    time, each awaited); stop early at the time limit.  `cpu_s` is this process's CPU over
    the sends: the client's share of what each message costs."""
    if create:
        await client.create_stream(stream, list(groups))
    body = b"x" * body_size
    bodies = [body] * batch
    sent = 0
    start_cpu = time.process_time()
    start = time.monotonic()
    deadline = start + time_limit_s
    try:
        while sent < messages and time.monotonic() < deadline:
            if single:
                await client.send(stream, body)
                sent += 1
                continue
            n = min(batch, messages - sent)
            await client.send_batch(stream, bodies[:n])
            sent += n
        elapsed = time.monotonic() - start
        cpu_s = time.process_time() - start_cpu
    finally:
        if delete:
            await client.delete_stream(stream)
    return {"messages": sent, "seconds": elapsed, "cpu_s": cpu_s}


async def produce_for(
    client: Client,
    *,
    stream: str,
    warmup_s: float,
    duration_s: float,
    batch: int,
    body_size: int,
    window: Any,
    time_limit_s: float,
    single: bool = False,
) -> dict[str, Any]:
    """Send as fast as acks come back (``single``: one ``send`` at a time, each awaited) for
    ``warmup_s`` uncounted, then count a window of ``duration_s`` on the same connection;
    ``window`` hears "open" and "close" so the runner reads the server's CPU at its edges.
    `cpu_s` is this process's CPU over the window: the client's share of each message."""
    await client.create_stream(stream, [])
    body = b"x" * body_size
    bodies = [body] * batch

    async def send() -> int:
        if single:
            await client.send(stream, body)
            return 1
        await client.send_batch(stream, bodies)
        return batch

    try:
        opens = time.monotonic() + min(warmup_s, time_limit_s)
        while time.monotonic() < opens:
            await send()
        window.put("open")
        sent = 0
        start_cpu = time.process_time()
        start = time.monotonic()
        closes = start + min(duration_s, time_limit_s)
        while time.monotonic() < closes:
            sent += await send()
        elapsed = time.monotonic() - start
        cpu_s = time.process_time() - start_cpu
        window.put("close")
    finally:
        await client.delete_stream(stream)
    return {"messages": sent, "seconds": elapsed, "cpu_s": cpu_s}


async def drain(
    client: Client,
    *,
    stream: str,
    group: str,
    messages: int,
    batch: int,
    block_s: float,
    ready: Any,
    go: Any,
    time_limit_s: float,
) -> dict[str, Any]:
    """Read a pre-loaded stream to the end through one group, acking each batch.  `cpu_s` is
    this process's CPU over the reads: the client's share of what each message costs."""
    ready.put(group)
    if not await _wait_event(go, time_limit_s):
        return {"messages": 0, "start_ns": 0, "end_ns": 0, "cpu_s": 0.0}
    got = 0
    start_cpu = time.process_time()
    start_ns = time.monotonic_ns()
    deadline = time.monotonic() + time_limit_s
    while got < messages and time.monotonic() < deadline:
        fetched = await client.fetch(stream, group, group, min(batch, messages - got), block_s)
        if fetched.bodies:
            await client.ack(stream, group, fetched)
            got += len(fetched.bodies)
    end_ns = time.monotonic_ns()
    cpu_s = time.process_time() - start_cpu
    return {"messages": got, "start_ns": start_ns, "end_ns": end_ns, "cpu_s": cpu_s}


async def park(
    client: Client,
    *,
    stream: str,
    parked: int,
    hold_s: float,
    settle_s: float,
    status: Any,
    go: Any,
    release: Any,
    time_limit_s: float,
) -> dict[str, Any]:
    """Create ``parked`` groups on an idle stream, park one blocking read per group, and hold
    them until the runner has sampled the server."""
    groups = [f"p{i}" for i in range(parked)]
    await client.create_stream(stream, groups)
    tasks: list[asyncio.Task[Fetched]] = []
    try:
        status.put("created")
        if not await _wait_event(go, time_limit_s):
            return {"parked": 0, "returned_early": 0}
        tasks = [asyncio.create_task(client.fetch(stream, g, "c", 1, hold_s)) for g in groups]
        await asyncio.sleep(settle_s)
        status.put("parked")
        await _wait_event(release, time_limit_s)
        done = [t for t in tasks if t.done()]
        errors = [repr(t.exception()) for t in done if not t.cancelled() and t.exception()]
        if errors:
            raise RuntimeError(f"{len(errors)} parked reads failed, first: {errors[0]}")
        return {"parked": parked - len(done), "returned_early": len(done)}
    finally:
        for t in tasks:
            t.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*tasks, return_exceptions=True)
        await client.delete_stream(stream)


ROLES: dict[str, Role] = {
    "wakeup_consumer": wakeup_consumer,
    "wakeup_producer": wakeup_producer,
    "produce": produce,
    "produce_for": produce_for,
    "drain": drain,
    "park": park,
}
