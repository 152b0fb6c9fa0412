"""Is the Redis peer as fast as Redis? Its fan-out read and batched produce with redis-py's
blocking client beside redis.asyncio (the harness' client), in the same run.

    python -m bench.peers.redis_client_check [--runs 3] [--messages 20000] [--groups 4]

`redis-server` as `bench.peers` starts it (AOF everysec).  Per run and per client kind, a
fresh stream of `--messages` 256-byte entries is read by `--groups` consumer groups, one
process each, as the harness' `consume_fanout` does: XREADGROUP COUNT n BLOCK with the last
read's XACK in the same pipeline, hiredis parsing the replies either way; the runs alternate
between the two kinds, for reads of 32 and of 1,000.  Then one producer process sends
`--messages` in pipelines of 64 XADDs, each awaited, as the harness' `produce_batch` does.
Printed: the rate (for a fan-out, every group's messages over the span from the first group's
start to the last one's end) per run, the medians, and blocking ÷ asyncio.  A ratio above 1
means the harness' Redis rows are slower than Redis can be driven from Python, and Longboat's
ratios against them flatter it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peers.redis_streams import FIELD, RedisStreams

KINDS = ("blocking", "asyncio")
BATCHES = (32, 1000)
PRODUCE_BATCH = 64  # the harness' produce_batch


def _read_all(pipe: Any, stream: str, group: str, batch: int, ids: list[bytes]) -> Any:
    """The harness' read: the last read's XACK and the next XREADGROUP in one pipeline."""
    if ids:
        pipe.xack(stream, group, *ids)
    pipe.xreadgroup(group, "c", {stream: ">"}, count=batch, block=2000)
    return pipe


def _entry_ids(reply: Any) -> list[bytes]:
    return [entry_id for entry_id, _ in reply[0][1]] if reply else []


def _drain_blocking(
    port: int, stream: str, group: str, todo: int, batch: int, go: Any
) -> tuple[int, int, int]:
    import redis

    r = redis.Redis(port=port)
    r.ping()
    go.wait()
    start, done, ids = time.monotonic_ns(), 0, []
    while done < todo:
        ids = _entry_ids(
            _read_all(r.pipeline(transaction=False), stream, group, batch, ids).execute()[-1]
        )
        done += len(ids)
    return start, time.monotonic_ns(), done


def _drain_asyncio(
    port: int, stream: str, group: str, todo: int, batch: int, go: Any
) -> tuple[int, int, int]:
    import asyncio

    import redis.asyncio as aioredis

    from longboat.cli.runtime import run

    async def drain() -> tuple[int, int, int]:
        r = aioredis.Redis(port=port)
        await r.ping()
        await asyncio.to_thread(go.wait)
        start, done, ids = time.monotonic_ns(), 0, []
        while done < todo:
            pipe = _read_all(r.pipeline(transaction=False), stream, group, batch, ids)
            ids = _entry_ids((await pipe.execute())[-1])
            done += len(ids)
        end = time.monotonic_ns()
        await r.aclose()
        return start, end, done

    return run(drain())


def _produce_blocking(
    port: int, stream: str, todo: int, batch: int, go: Any
) -> tuple[int, int, int]:
    import redis

    r = redis.Redis(port=port)
    r.ping()
    go.wait()
    start = time.monotonic_ns()
    for first in range(0, todo, batch):
        _batch(r.pipeline(transaction=False), stream, min(batch, todo - first)).execute()
    return start, time.monotonic_ns(), todo


def _produce_asyncio(
    port: int, stream: str, todo: int, batch: int, go: Any
) -> tuple[int, int, int]:
    import asyncio

    import redis.asyncio as aioredis

    from longboat.cli.runtime import run

    async def produce() -> tuple[int, int, int]:
        r = aioredis.Redis(port=port)
        await r.ping()
        await asyncio.to_thread(go.wait)
        start = time.monotonic_ns()
        for first in range(0, todo, batch):
            await _batch(r.pipeline(transaction=False), stream, min(batch, todo - first)).execute()
        end = time.monotonic_ns()
        await r.aclose()
        return start, end, todo

    return run(produce())


def _batch(pipe: Any, stream: str, count: int) -> Any:
    """The harness' batch: a pipeline (no MULTI) of XADDs."""
    for _ in range(count):
        pipe.xadd(stream, {FIELD: b"x" * 256})
    return pipe


def _producer(kind: str, port: int, stream: str, todo: int, go: Any, out: Any) -> None:
    produce = _produce_blocking if kind == "blocking" else _produce_asyncio
    out.put(produce(port, stream, todo, PRODUCE_BATCH, go))


def produce(port: int, kind: str, messages: int, name: str) -> float:
    """One producer's batched sends to a fresh stream; msgs/s."""
    import redis

    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_producer, args=(kind, port, name, messages, go, out))
    proc.start()
    time.sleep(1.0)
    go.set()
    start, end, done = out.get(timeout=300)
    proc.join(30)
    r = redis.Redis(port=port)
    r.delete(name)
    r.close()
    return done / ((end - start) / 1e9)


def _group(
    kind: str, port: int, stream: str, group: str, todo: int, batch: int, go: Any, out: Any
) -> None:
    drain = _drain_blocking if kind == "blocking" else _drain_asyncio
    out.put(drain(port, stream, group, todo, batch, go))


def fan_out(port: int, kind: str, batch: int, messages: int, groups: int, name: str) -> float:
    """One fan-out read of a fresh stream; the aggregate msgs/s."""
    import redis

    r = redis.Redis(port=port)
    for first in range(0, messages, 1000):
        _batch(r.pipeline(transaction=False), name, min(1000, messages - first)).execute()
    for g in range(groups):
        r.xgroup_create(name, f"g{g}", id="0")
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_group, args=(kind, port, name, f"g{g}", messages, batch, go, out))
        for g in range(groups)
    ]
    for proc in procs:
        proc.start()
    time.sleep(1.0)  # every group connected and waiting
    go.set()
    spans = [out.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(30)
    r.delete(name)
    r.close()
    seconds = (max(end for _, end, _ in spans) - min(start for start, _, _ in spans)) / 1e9
    return sum(done for _, _, done in spans) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=4)
    args = parser.parse_args()
    server = RedisStreams()
    reason = server.missing()
    if reason is not None:
        parser.error(f"redis: {reason}")
    with tempfile.TemporaryDirectory(prefix="redis-check-") as workdir:
        server.start(Path(workdir))
        port = server.endpoint()["port"]
        try:
            for batch in BATCHES:
                rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
                for run in range(args.runs):
                    for kind in KINDS:
                        name = f"check-{batch}-{kind}-{run}"
                        rate = fan_out(port, kind, batch, args.messages, args.groups, name)
                        rates[kind].append(rate)
                        print(
                            f"reads of {batch}, {kind}, run {run + 1}: {rate:,.0f} msgs/s",
                            flush=True,
                        )
                blocking, asyncio_ = (statistics.median(rates[k]) for k in KINDS)
                print(
                    f"reads of {batch}: medians blocking {blocking:,.0f}, asyncio {asyncio_:,.0f} "
                    f"msgs/s; blocking / asyncio {blocking / asyncio_:.2f}x"
                )
            rates = {kind: [] for kind in KINDS}
            for run in range(args.runs):
                for kind in KINDS:
                    rate = produce(port, kind, args.messages, f"check-produce-{kind}-{run}")
                    rates[kind].append(rate)
                    print(f"batched produce, {kind}, run {run + 1}: {rate:,.0f} msgs/s", flush=True)
            blocking, asyncio_ = (statistics.median(rates[k]) for k in KINDS)
            print(
                f"batched produce: medians blocking {blocking:,.0f}, asyncio {asyncio_:,.0f} "
                f"msgs/s; blocking / asyncio {blocking / asyncio_:.2f}x"
            )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
