"""Timer messages' cost: memory and idle CPU of a broker holding many pending timers, and how
late 10,000 timers due in the same second fire.

One broker (ASYNC_FLUSH, its own store in a temporary directory) runs in this process:

1. `--pending` timers (default 1,000,000), due at spread times over the next three days,
   are appended through the broker's own append path (the one both protocols call), then
   the broker is restarted on the same store, so the pending set is rebuilt from disk as
   after a crash: the figures are the wheel's own bytes (its arrays, dict and heap), the
   process's resident memory before and after the restart's rebuild, and the rebuild time;
2. the restarted broker idles for `--idle-s` seconds: its process CPU time over that wall
   time, as a share of one core;
3. `--burst` timers (default 10,000) due at one instant (a whole second, 5 s ahead) are
   appended; the figure is how long after that instant the last of them is stored in its
   topic (polled every 10 ms).

    python -m bench.timer_bench [--pending N] [--burst N] [--idle-s S] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import results
from longboat.broker import BrokerConfig, BrokerController
from longboat.protocol.properties import Prop
from longboat.store import MessageInner

TOPIC = "TimerBench"
DAY_MS = 24 * 3600 * 1000


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def wheel_bytes(broker: BrokerController) -> int:
    """The pending set's own memory: the arrays of offsets, the dict of due times, the heap."""
    timers = broker.timers
    assert timers is not None
    wheel = timers.wheel  # type: ignore[attr-defined]
    size = sys.getsizeof(wheel.slots) + sys.getsizeof(wheel.heap)
    size += sum(sys.getsizeof(slot) for slot in wheel.slots.values())
    size += sum(sys.getsizeof(due) for due in wheel.slots)
    return size


async def start(store: Path) -> BrokerController:
    broker = BrokerController(
        BrokerConfig(
            listen_host="127.0.0.1",
            listen_port=0,
            broker_ip1="127.0.0.1",
            store_path_root_dir=store,
            mapped_file_size_commit_log=256 * 1024 * 1024,
            grpc_listen_port=-1,
        )
    )
    await broker.start()
    return broker


def timer(deliver_ms: int, queue_id: int = 0) -> MessageInner:
    props = {Prop.TIMER_DELIVER_MS: str(deliver_ms), Prop.UNIQ_KEY: f"{deliver_ms:X}"}
    return MessageInner(topic=TOPIC, queue_id=queue_id, body=b"t" * 16, properties=props)


async def fill(broker: BrokerController, count: int) -> float:
    """Append `count` timers due over the next three days (yielding to the loop now and then);
    the seconds it took."""
    began = time.monotonic()
    now = int(time.time() * 1000)
    # The first due an hour ahead: none fires while the rest are appended and reloaded.
    step = max(1, (3 * DAY_MS - 2 * 3600_000) // count)
    for i in range(count):
        result = broker.appender.store_message(timer(now + 3600_000 + i * step))
        assert result.status.value == "PUT_OK", result
        if i % 5000 == 0:
            await asyncio.sleep(0)
    return time.monotonic() - began


async def burst(broker: BrokerController, count: int) -> float:
    """Seconds from the shared due instant until the last of `count` timers is in its topic."""
    due_ms = (int(time.time()) + 5) * 1000  # after the appends, on a busy machine too
    before = broker.store.max_offset(TOPIC, 1)
    for _ in range(count):
        broker.appender.store_message(timer(due_ms, queue_id=1))
    while broker.store.max_offset(TOPIC, 1) - before < count:
        await asyncio.sleep(0.01)
    return time.time() - due_ms / 1000


async def run(pending: int, burst_size: int, idle_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="timer-bench-") as tmp:
        store = Path(tmp)
        broker = await start(store)
        broker.topics.create_topic(results_topic_config())
        fill_s = await fill(broker, pending)
        await broker.stop()
        gc.collect()
        rss_before = rss_bytes()
        began = time.monotonic()
        broker = await start(store)
        rebuild_s = time.monotonic() - began
        rss_after = rss_bytes()
        assert broker.timers is not None
        assert broker.timers.pending == pending, (broker.timers.pending, pending)
        wheel = wheel_bytes(broker)
        cpu0, wall0 = cpu_s(), time.monotonic()
        await asyncio.sleep(idle_s)
        idle_share = (cpu_s() - cpu0) / (time.monotonic() - wall0)
        late_s = await burst(broker, burst_size)
        await broker.stop()
    return {
        "fill_s": round(fill_s, 1),
        "rebuild_s": round(rebuild_s, 2),
        "wheel_bytes": wheel,
        "rss_growth_bytes": rss_after - rss_before,
        "idle_cpu_share": round(idle_share, 5),
        "burst_last_fired_after_due_s": round(late_s, 3),
    }


def results_topic_config() -> Any:
    from longboat.protocol.bodies import TopicConfig

    return TopicConfig(TOPIC, 2, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--burst", type=int, default=10_000)
    parser.add_argument("--idle-s", type=float, default=10.0)
    results.add_json_option(parser, "timer_bench")
    args = parser.parse_args()
    got = asyncio.run(run(args.pending, args.burst, args.idle_s))
    page = results.Page()
    page.table("Timer messages", ["figure", "value"])
    mib = 1024 * 1024
    page.row("pending timers", f"{args.pending:,}")
    page.row("wheel (arrays, dict, heap)", f"{got['wheel_bytes'] / mib:.1f} MiB")
    page.row("resident memory growth of the restart", f"{got['rss_growth_bytes'] / mib:.1f} MiB")
    page.row("pending set rebuilt from disk in", f"{got['rebuild_s']} s")
    page.row("idle CPU with them", f"{got['idle_cpu_share'] * 100:.2f} % of a core")
    page.row(
        f"{args.burst:,} due in one second: the last stored",
        f"{got['burst_last_fired_after_due_s']} s after due",
    )
    page.target(
        "idle CPU with the pending timers",
        "< 1 % of a core",
        f"{got['idle_cpu_share'] * 100:.2f} %",
        got["idle_cpu_share"] < 0.01,
    )
    page.target(
        f"{args.burst:,} timers due in one second fire within",
        "2 s",
        f"{got['burst_last_fired_after_due_s']} s",
        got["burst_last_fired_after_due_s"] <= 2.0,
    )
    sizes = {"pending": args.pending, "burst": args.burst, "idle_s": args.idle_s}
    result = results.record(
        "timer_bench",
        sizes=sizes,
        runs=[got],
        summary=got,
        settings={"cpus": os.cpu_count()},
        page=page.as_dict(),
    )
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
