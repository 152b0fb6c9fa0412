"""A long run under faults: `python -m bench.soak --minutes 30`.

A name server and a SYNC_FLUSH broker (its RocketMQ 5 gRPC endpoint on) run as child
processes; this process sends in every mode the remoting client has (sync, async with a
callback, batch, oneway, delayed by level, timer at an exact time, transactional) and four
consumer groups consume in child processes: the push consumer, the lite pull consumer (both
from the first offset: at least once, never from the end), the pop consumer over remoting and
the official RocketMQ 5 Python client's SimpleConsumer over gRPC (both pop from the first
offset of a new group, receive, record, then ack).
Faults, on a fixed rhythm: the broker is SIGKILLed and restarted on its data, a consumer
process is SIGKILLed and restarted, the producers are shut down and started again (new
connections).  When the time is up the faults stop, the consumers drain, and the run reports:

- acknowledged: sends the broker answered SEND_OK (a oneway send is never acknowledged, so it
  is counted as sent only);
- lost: acknowledged messages a group never received (the target is 0);
- duplicates: deliveries past the first (expected after kills: delivery is at least once);
- broker RSS (and its anonymous part: RSS also counts the mapped commit-log and queue pages
  touched, which grow with the log), open file descriptors and the send p99 of each sampling
  interval (targets: anonymous memory and fds flat after warm-up; the page shows their medians
  per 5-minute window).

Figures go to `bench/results/soak.json` (`bench.results`: commit, host, date; `--json` elsewhere)
and a plot beside it (`.png`).  Consumers write the
ids they receive to a file each, flushed per batch, so a SIGKILL loses at most a partial last
line, whose message is then redelivered or was not acknowledged by the consumer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer
from rocketmq.v5.util.misc import Misc

from bench import results
from longboat.bench.plot import pyplot
from longboat.bench.stats import percentile
from longboat.client import ClientConfig, ClientError, Message, MessageExt
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.pop import PopConsumer
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, PushConsumer
from longboat.client.transaction import LocalTransactionState, TransactionProducer

TOPIC = "SoakTopic"
GROUPS = {"push": "soak_push", "lite": "soak_lite", "pop": "soak_pop", "grpc": "soak_grpc"}
MODES = ("sync", "async", "batch", "oneway", "delayed", "timer", "transaction")
# A popped message not acked (its consumer was killed, or the broker restarted before the ack)
# comes back after this long.
INVISIBLE_S = 10
# The page's resource table: one row per window of this many seconds.
WINDOW_S = 300
# A timer message is due this long after its send.
TIMER_AFTER = timedelta(seconds=2)
READY_TIMEOUT_S = 60.0


@dataclass
class Rhythm:
    """Seconds between faults and samples."""

    broker_kill: float
    consumer_kill: float
    producer_churn: float
    sample: float


@dataclass
class Interval:
    """One sampling interval's figures."""

    t: float
    acknowledged: int
    received: dict[str, int]
    broker_rss_mib: float | None
    broker_anon_mib: float | None
    broker_fds: int | None
    send_p99_ms: float | None


@dataclass
class Tally:
    acknowledged: set[str] = field(default_factory=set)
    sent_by_mode: dict[str, int] = field(default_factory=dict)
    failed_sends: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=itertools.count)

    def next_id(self, mode: str) -> str:
        self.sent_by_mode[mode] = self.sent_by_mode.get(mode, 0) + 1
        return f"{mode}-{next(self.ids)}"


# ---------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"nothing listening on {port} after {READY_TIMEOUT_S} s")


async def create_topic_once_registered(namesrv: str) -> None:
    """Create the run's topic as soon as the broker has registered with the name server (a
    listening port comes first; on a loaded host its registration can follow seconds later)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    async with Admin(config=ClientConfig([namesrv], instance_name="soak-admin")) as admin:
        while True:
            try:
                await admin.create_topic(TOPIC, queue_nums=4)
                return
            except ClientError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)


class Child:
    """A child process that can be SIGKILLed and started again with the same command."""

    def __init__(self, args: Sequence[str], log: Path) -> None:
        self.args = [sys.executable, *args]
        self.log = log
        self.kills = 0
        self.proc = self._spawn()

    def _spawn(self) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as out:
            return subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1

    def restart(self) -> None:
        self.proc = self._spawn()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def usage(pid: int) -> tuple[float, float, int] | None:
    """RSS and its anonymous part (the heap: RSS also counts the mapped log pages read or
    written, which follow the log, not a leak) in MiB, and open file descriptors of a
    process; None when it is gone (killed between two samples)."""
    with contextlib.suppress(psutil.Error):
        proc = psutil.Process(pid)
        with proc.oneshot():
            mem = proc.memory_info()
            return mem.rss / 2**20, (mem.rss - mem.shared) / 2**20, proc.num_fds()
    return None


# ---------------------------------------------------------------------------- consumers


async def consume(kind: str, namesrv: str, out: Path) -> None:
    """A remoting consumer child: append each received id to `out`, one line each, flushed
    per batch (a pop consumer acks a batch once it is written)."""
    config = ClientConfig([namesrv], instance_name=f"soak-{kind}-{os.getpid()}")
    with out.open("a") as sink:

        def record(msgs: list[MessageExt]) -> None:
            sink.write("".join(m.body.decode() + "\n" for m in msgs))
            sink.flush()

        if kind == "push":

            async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
                record(msgs)

            push = PushConsumer(GROUPS[kind], config=config, consume_from=ConsumeFrom.FIRST_OFFSET)
            push.subscribe(TOPIC, "*")
            push.register_listener(listener)
            await push.start()
            await asyncio.Event().wait()
        if kind == "pop":
            pop = PopConsumer(GROUPS[kind], config=config)
            await pop.start()
            while True:
                try:
                    popped = await pop.receive(TOPIC, max_messages=32, invisible_time=INVISIBLE_S)
                except ClientError:
                    await asyncio.sleep(0.5)  # the broker is down
                    continue
                record([p.message for p in popped])
                acks = await asyncio.gather(*map(pop.ack, popped), return_exceptions=True)
                if any(isinstance(a, ClientError) for a in acks):  # down, or a handle expired
                    await asyncio.sleep(0.5)
        lite = LitePullConsumer(
            GROUPS[kind], config=config, consume_from=ConsumeFrom.FIRST_OFFSET,
            auto_commit_interval=1.0,
        )  # fmt: skip
        lite.subscribe(TOPIC, "*")
        await lite.start()
        while True:
            record(await lite.poll(1.0))


def consume_grpc(endpoint: str, out: Path) -> None:
    """The gRPC consumer child: the official RocketMQ 5 Python client's SimpleConsumer
    receives, its ids are appended to `out` and flushed, then each is acked."""
    # The official client starts its telemetry stream through grpc.aio, which asks the calling
    # thread for its event loop; it finds its own IP by routing towards a public address.
    asyncio.set_event_loop(asyncio.new_event_loop())
    Misc._Misc__LOCAL_IP = "127.0.0.1"
    consumer = SimpleConsumer(
        ClientConfiguration(endpoint, Credentials(), request_timeout=10),
        GROUPS["grpc"], {TOPIC: FilterExpression()}, await_duration=5,
    )  # fmt: skip
    while True:
        try:
            consumer.startup()
            break
        except Exception:  # the broker is down while this child starts: try again
            time.sleep(1.0)
    # Acks of a batch go together (the client's ack_async hands back no future in 5.1.2).
    with out.open("a") as sink, ThreadPoolExecutor(8) as acks:
        while True:
            try:
                got = consumer.receive(32, INVISIBLE_S)
                sink.write("".join(m.body.decode() + "\n" for m in got))
                sink.flush()
                list(acks.map(consumer.ack, got))
            except Exception:  # the official client's errors: the broker is down, a stale handle
                time.sleep(0.5)


def received(out: Path) -> list[str]:
    """The ids in a consumer's file (a partial last line, cut by a SIGKILL, left out)."""
    if not out.exists():
        return []
    text = out.read_text()
    lines = text.split("\n")
    return [line for line in lines[:-1] if line]


# ---------------------------------------------------------------------------- producers


async def produce(namesrv: str, tally: Tally, until: float, churn: float) -> None:
    """Send in every mode, round robin, until `until`; the producers are replaced every
    `churn` seconds (new clients, new connections)."""
    modes = itertools.cycle(MODES)

    generation = itertools.count()
    while time.monotonic() < until:
        gen = next(generation)
        config = ClientConfig([namesrv], instance_name=f"soak-producer-{gen}")
        producer = Producer("soak_pg", config=config)
        tx = TransactionProducer(
            "soak_tx", check_listener=committed,
            config=ClientConfig([namesrv], instance_name=f"soak-tx-{gen}"),
        )  # fmt: skip
        await producer.start()
        await tx.start()
        try:
            churn_at = min(until, time.monotonic() + churn)
            while time.monotonic() < churn_at:
                mode = next(modes)
                ids = [tally.next_id(mode) for _ in range(3 if mode == "batch" else 1)]
                msgs = [message(mode, i) for i in ids]
                started = time.perf_counter()
                try:
                    ok = await send(producer, tx, mode, msgs)
                except Exception:
                    ok = False
                if ok:
                    tally.latencies_ms.append((time.perf_counter() - started) * 1000)
                    if mode != "oneway":
                        tally.acknowledged.update(ids)
                else:
                    tally.failed_sends += 1
                    await asyncio.sleep(0.2)  # the broker is down: do not spin
        finally:
            await producer.shutdown()
            await tx.shutdown()


def message(mode: str, id_: str) -> Message:
    """The message carrying `id_` for a send in `mode` (delayed: the first level; timer: due
    `TIMER_AFTER` from now)."""
    if mode == "delayed":
        return Message(TOPIC, id_.encode(), keys=id_, delay_level=1)
    if mode == "timer":
        return Message(TOPIC, id_.encode(), keys=id_, deliver_at=datetime.now(UTC) + TIMER_AFTER)
    return Message(TOPIC, id_.encode(), keys=id_)


def committed(msg: object) -> LocalTransactionState:
    """Every local transaction commits; a check-back (after a kill) says so too."""
    return LocalTransactionState.COMMIT_MESSAGE


async def send(producer: Producer, tx: TransactionProducer, mode: str, msgs: list[Message]) -> bool:
    """One send in `mode`; whether it was acknowledged (oneway: whether it went out)."""
    if mode == "batch":
        return (await producer.send_batch(msgs)).ok
    if mode == "oneway":
        await producer.send_oneway(msgs[0])
        return True
    if mode == "async":
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def callback(result: object, error: BaseException | None) -> None:
            done.set_result(error is None and getattr(result, "ok", False))

        task = producer.send_async(msgs[0], callback)
        with contextlib.suppress(Exception):
            await task  # the callback has the outcome; this only collects a failure
        return await done
    if mode == "transaction":
        result = await tx.send_in_transaction(msgs[0], lambda m, a: committed(m))
        return result.send.ok
    return (await producer.send(msgs[0])).ok


# ---------------------------------------------------------------------------- the run


async def run(minutes: float, rhythm: Rhythm, out: Path | None, drain_s: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    namesrv_port, broker_port, grpc_port = free_port(), free_port(), free_port()
    namesrv = f"127.0.0.1:{namesrv_port}"
    cli = ["-m", "longboat.cli"]
    ns = Child([*cli, "namesrv", "--port", str(namesrv_port)], work / "namesrv.log")
    broker = Child(
        [*cli, "broker", "--namesrvAddr", namesrv, "--listenPort", str(broker_port),
         "--brokerIP1", "127.0.0.1", "--storePathRootDir", str(work / "store"),
         "--flushDiskType", "SYNC_FLUSH", "--mappedFileSizeCommitLog", str(16 * 2**20),
         "--haListenPort", "0", "--grpcListenPort", str(grpc_port),
         "--transactionCheckInterval", "2000",
         "--messageDelayLevel", "1s 2s"],
        work / "broker.log",
    )  # fmt: skip
    consumers: dict[str, Child] = {}
    tally = Tally()
    samples: list[Interval] = []
    try:
        await wait_listening(namesrv_port, ns.proc)
        await wait_listening(broker_port, broker.proc)
        await create_topic_once_registered(namesrv)
        for kind in GROUPS:
            consumers[kind] = Child(
                ["-m", "bench.soak", "consume", kind, "--namesrv", namesrv,
                 "--grpc", f"127.0.0.1:{grpc_port}", "--ids", str(work / f"{kind}.ids")],
                work / f"{kind}.log",
            )  # fmt: skip
        start = time.monotonic()
        until = start + minutes * 60

        async def faults() -> None:
            next_broker = start + rhythm.broker_kill
            next_consumer = start + rhythm.consumer_kill
            victims = itertools.cycle(GROUPS)
            while time.monotonic() < until:
                await asyncio.sleep(0.2)
                now = time.monotonic()
                if now >= next_broker:
                    broker.kill()
                    await asyncio.sleep(1.0)
                    broker.restart()
                    await wait_listening(broker_port, broker.proc)
                    next_broker = time.monotonic() + rhythm.broker_kill
                if now >= next_consumer:
                    victim = consumers[next(victims)]
                    victim.kill()
                    victim.restart()
                    next_consumer = now + rhythm.consumer_kill

        async def sampler() -> None:
            seen = 0
            while time.monotonic() < until + drain_s:
                await asyncio.sleep(rhythm.sample)
                latencies = sorted(tally.latencies_ms[seen:])
                seen = len(tally.latencies_ms)
                rss, anon, fds = usage(broker.proc.pid) or (None, None, None)
                samples.append(
                    Interval(
                        t=round(time.monotonic() - start, 1),
                        acknowledged=len(tally.acknowledged),
                        received={k: len(received(work / f"{k}.ids")) for k in GROUPS},
                        broker_rss_mib=None if rss is None else round(rss, 1),
                        broker_anon_mib=None if anon is None else round(anon, 1),
                        broker_fds=fds,
                        send_p99_ms=round(percentile(latencies, 99), 2) if latencies else None,
                    )
                )

        sampling = asyncio.create_task(sampler())
        await asyncio.gather(produce(namesrv, tally, until, rhythm.producer_churn), faults())
        drained = await drain(work, tally, drain_s)
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
    finally:
        for child in [*consumers.values(), broker, ns]:
            child.stop()
    report = summary(minutes, tally, work, samples, drained, broker.kills,
                     sum(c.kills for c in consumers.values()))  # fmt: skip
    print(f"result: {write(report, samples, rhythm, out)}")
    if report["lost"]:
        print(f"kept for a look: the store, the logs and the ids received, in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return report


async def drain(work: Path, tally: Tally, drain_s: float) -> float:
    """Wait until each group received every acknowledged message, or `drain_s` passed;
    returns the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < drain_s:
        if all(tally.acknowledged <= set(received(work / f"{k}.ids")) for k in GROUPS):
            break
        await asyncio.sleep(1.0)
    return round(time.monotonic() - started, 1)


def summary(
    minutes: float, tally: Tally, work: Path, samples: list[Interval], drained: float,
    broker_kills: int, consumer_kills: int,
) -> dict[str, Any]:  # fmt: skip
    groups: dict[str, dict[str, int]] = {}
    for kind in GROUPS:
        got = received(work / f"{kind}.ids")
        unique = set(got)
        groups[kind] = {
            "received": len(got),
            "lost": len(tally.acknowledged - unique),
            "duplicates": len(got) - len(unique),
        }
    latencies = sorted(tally.latencies_ms)
    return {
        "minutes": minutes,
        "sent_by_mode": tally.sent_by_mode,
        "acknowledged": len(tally.acknowledged),
        "failed_sends": tally.failed_sends,
        "lost": sum(g["lost"] for g in groups.values()),
        "groups": groups,
        "broker_kills": broker_kills,
        "consumer_kills": consumer_kills,
        "drain_seconds": drained,
        "send_p99_ms": round(percentile(latencies, 99), 2) if latencies else None,
        "intervals": [asdict(s) for s in samples],
    }


def write(
    report: dict[str, Any], samples: list[Interval], rhythm: Rhythm, out: Path | None
) -> Path:
    """The run as a `bench.results` document (the page: the lost-nothing target and one row of
    figures), its plot beside it; returns the JSON's path."""
    page = results.Page()
    page.target("acknowledged messages lost", "0", str(report["lost"]), report["lost"] == 0)
    page.table(
        f"Soak: {report['minutes']} min under faults",
        ["acknowledged", "lost", f"duplicates ({' / '.join(GROUPS)})", "broker kills",
         "consumer kills", "send p99 ms"],
    )  # fmt: skip
    groups = report["groups"]
    page.row(
        report["acknowledged"], report["lost"],
        " / ".join(str(groups[kind]["duplicates"]) for kind in GROUPS),
        report["broker_kills"], report["consumer_kills"], report["send_p99_ms"],
    )  # fmt: skip
    page.table(
        "Broker resources per 5-minute window (medians; the first window is warm-up)",
        ["minutes", "anonymous MiB", "RSS MiB", "open fds", "send p99 ms"],
    )  # fmt: skip
    for start_s in range(0, int(samples[-1].t) + 1 if samples else 0, WINDOW_S):
        window = [s for s in samples if start_s <= s.t < start_s + WINDOW_S]
        drain = " (drain)" if start_s >= report["minutes"] * 60 else ""
        page.row(
            f"{start_s // 60} to {(start_s + WINDOW_S) // 60}{drain}",
            *(median_of([getattr(s, f) for s in window])
              for f in ("broker_anon_mib", "broker_rss_mib", "broker_fds", "send_p99_ms")),
        )  # fmt: skip
    shown = {k: v for k, v in report.items() if k != "intervals"}
    document = results.record(
        "soak", sizes={"minutes": report["minutes"]}, settings=asdict(rhythm), runs=[report],
        summary=shown, page=page.as_dict(),
    )  # fmt: skip
    path = results.save(document, out)
    plt = pyplot()
    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    t = [s.t for s in samples]
    axes[0].plot(t, [s.acknowledged for s in samples], label="acknowledged")
    for kind in GROUPS:
        axes[0].plot(t, [s.received[kind] for s in samples], label=f"received ({kind})")
    axes[0].set_ylabel("messages")
    axes[0].legend()
    axes[1].plot(t, [s.broker_rss_mib for s in samples], label="RSS")
    axes[1].plot(t, [s.broker_anon_mib for s in samples], label="anonymous (heap)")
    axes[1].set_ylabel("broker MiB")
    axes[1].legend()
    axes[2].plot(t, [s.broker_fds for s in samples])
    axes[2].set_ylabel("broker open fds")
    axes[3].plot(t, [s.send_p99_ms for s in samples])
    axes[3].set_ylabel("send p99 (ms)")
    axes[3].set_xlabel("seconds")
    fig.suptitle(f"soak: {report['minutes']} min, lost {report['lost']}")
    fig.tight_layout()
    fig.savefig(path.with_suffix(".png"), dpi=90)
    plt.close(fig)
    return path


def median_of(values: Sequence[float | None]) -> float | str:
    """The median of the values sampled (a killed broker's samples are None), or "n/a"."""
    present = [v for v in values if v is not None]
    return round(float(statistics.median(present)), 1) if present else "n/a"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("consume", help="(a consumer child of the run)")
    child.add_argument("kind", choices=sorted(GROUPS))
    child.add_argument("--namesrv", required=True)
    child.add_argument("--grpc", required=True, help="the broker's gRPC endpoint")
    child.add_argument("--ids", type=Path, required=True)
    parser.add_argument("--minutes", type=float, default=30.0)
    results.add_json_option(parser, "soak")
    parser.add_argument("--broker-kill-every", type=float, default=60.0)
    parser.add_argument("--consumer-kill-every", type=float, default=25.0)
    parser.add_argument("--producer-churn-every", type=float, default=10.0)
    parser.add_argument("--sample-every", type=float, default=5.0)
    parser.add_argument("--drain-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    if args.command == "consume" and args.kind == "grpc":
        consume_grpc(args.grpc, args.ids)
        return 0
    if args.command == "consume":
        asyncio.run(consume(args.kind, args.namesrv, args.ids))
        return 0
    rhythm = Rhythm(
        args.broker_kill_every, args.consumer_kill_every, args.producer_churn_every,
        args.sample_every,
    )  # fmt: skip
    report = asyncio.run(run(args.minutes, rhythm, args.json, args.drain_seconds))
    shown = {k: v for k, v in report.items() if k != "intervals"}
    print(json.dumps(shown, indent=2))
    return 0 if report["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
