"""Store benchmark: append, read and recovery rates of `longboat.store`, median of several runs.

    python -m bench.store_bench [--runs 3] [--messages 200000] [--recovery-gib 1.0] [--reads-only]

Appends: 256-byte and 4 KiB bodies (each with TAGS, WAIT and a UNIQ_KEY, as a Java producer
sends them), one message per call and batches of 100, under ASYNC_FLUSH and SYNC_FLUSH (one
writer, and 16 concurrent writers sharing fsyncs).  Reads: every queue pulled by offset, for
three shapes of log (`READ_SHAPES`: long runs per queue, queues interleaved record by record,
batches of 500 in turn read by pulls of 1,024).
Recovery: a log of `--recovery-gib` GiB reopened after a clean close, after a crash with the
usual 1-second checkpoint lag, and with no checkpoint at all (every byte re-verified, queues
and index rebuilt).  Each throughput row is paired with a floor measured in the same run (the
memcpy, fsync or slice it cannot avoid), so ratios stay meaningful on a noisy machine.
Default config (1 GiB segments) on the file system holding --dir.  The tables and every run's
figures go to `bench/results/store_bench.json` (`--json` elsewhere).
"""

from __future__ import annotations

import argparse
import gc
import mmap
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from bench import results
from longboat.protocol.message import encode_record_batch
from longboat.protocol.properties import properties_to_string
from longboat.store import (
    EncodedBatch,
    FlushDiskType,
    MessageInner,
    MessageStore,
    PutResult,
    StoreConfig,
)
from longboat.store.checkpoint import ABORT_FILE, CHECKPOINT_FILE

BATCH = 100
PULL = 32
SYNC_WRITERS = 16
HOST = b"\x7f\x00\x00\x01"


def make_messages(n: int, body_size: int, queues: int = 4) -> list[MessageInner]:
    body = bytes(random.Random(body_size).randbytes(body_size))
    return [
        MessageInner(
            "BenchTopic",
            i % queues,
            body,
            {"TAGS": "TagA", "WAIT": "true", "UNIQ_KEY": f"7F0000010F2C18B4AAC2{i:012X}"},
            born_timestamp=1_700_000_000_000 + i,
            born_port=50000,
        )
        for i in range(n)
    ]


def by_queue(msgs: list[MessageInner]) -> list[list[MessageInner]]:
    """Each queue's messages, in order."""
    queues: dict[int, list[MessageInner]] = {}
    for m in msgs:
        queues.setdefault(m.queue_id, []).append(m)
    return list(queues.values())


def batches_by_queue(msgs: list[MessageInner]) -> list[list[MessageInner]]:
    out = []
    for queue_msgs in by_queue(msgs):
        out += [queue_msgs[i : i + BATCH] for i in range(0, len(queue_msgs), BATCH)]
    return out


def encoded_batches(batches: list[list[MessageInner]]) -> list[EncodedBatch]:
    """The same batches as the broker's SEND_BATCH_MESSAGE path hands them over: property
    strings already encoded, producer fields shared by the batch."""
    return [
        EncodedBatch(
            b[0].topic,
            b[0].queue_id,
            [(m.body, properties_to_string(m.properties).encode(), m.flag) for m in b],
            born_timestamp=b[0].born_timestamp,
            born_port=b[0].born_port,
        )
        for b in batches
    ]


@dataclass
class Figure:
    msgs_per_s: float
    mb_per_s: float
    appends_per_sync: float  # SYNC_FLUSH: durability requests served per fdatasync


def store_config(root: Path, flush: FlushDiskType) -> StoreConfig:
    return StoreConfig(root_dir=root, flush_disk_type=flush)


def timed_store_run(
    base: Path, flush: FlushDiskType, work: Callable[[MessageStore], int]
) -> tuple[float, int, int, float]:
    """(seconds, messages, log bytes, appends per fdatasync) of `work` on a fresh store;
    open and close are not timed."""
    root = Path(tempfile.mkdtemp(dir=base))
    store = MessageStore(store_config(root, flush))
    store.open()
    try:
        start = time.perf_counter()
        count = work(store)
        elapsed = time.perf_counter() - start
        size = store.max_physical_offset
        syncs, requests = store.flush_stats
    finally:
        store.close()
        shutil.rmtree(root)
    return elapsed, count, size, requests / syncs if syncs else 0.0


def appends(method: str, units: list, count: int) -> Callable[[MessageStore], int]:
    """Work that hands each unit (a message, or a batch) to `store.<method>`."""

    def work(store: MessageStore) -> int:
        put = getattr(store, method)
        for unit in units:
            put(unit)
        return count

    return work


def append_sync(msgs: list[MessageInner], writers: int) -> Callable[[MessageStore], int]:
    """Each writer appends one message at a time and waits until it is durable."""

    def work(store: MessageStore) -> int:
        def write(part: list[MessageInner]) -> None:
            for m in part:
                store.put_message(m).wait_durable(60)

        threads = [threading.Thread(target=write, args=(msgs[w::writers],)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return len(msgs)

    return work


def encoded_records(msgs: list[MessageInner]) -> bytes:
    messages = [(m.body, properties_to_string(m.properties).encode(), 0) for m in msgs]
    senders = [(0, m.born_timestamp, HOST, m.born_port, 0, 0) for m in msgs]
    data, _ = encode_record_batch(
        topic=b"BenchTopic",
        queue_id=0,
        commit_log_offset=0,
        store_timestamp=1,
        store_host=HOST,
        store_port=10911,
        messages=messages,
        senders=senders,
        queue_offsets=list(range(len(messages))),
    )
    return data


def memcpy_floor(base: Path, data: bytes, chunk: int) -> float:
    """Seconds to copy `data` into a fresh preallocated mapped file, `chunk` bytes at a time."""
    path = base / "floor"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        size = len(data) + (1 << 20)
        os.posix_fallocate(fd, 0, size)
        mm = mmap.mmap(fd, size)
        view = memoryview(data)
        start = time.perf_counter()
        for pos in range(0, len(data), chunk):
            end = min(pos + chunk, len(data))
            mm[pos:end] = view[pos:end]
        elapsed = time.perf_counter() - start
        view.release()
        mm.close()
    finally:
        os.close(fd)
        path.unlink()
    return elapsed


def fsync_floor(base: Path, count: int, record: int) -> float:
    """Seconds for `count` appends of `record` bytes, each followed by its own fdatasync."""
    path = base / "fsync-floor"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        payload = b"x" * record
        start = time.perf_counter()
        for _ in range(count):
            os.write(fd, payload)
            os.fdatasync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()


def stored_by_queue(store: MessageStore, msgs: list[MessageInner]) -> list[PutResult]:
    """Batches of BATCH, every batch of one queue before the next queue's: long runs."""
    return [store.put_messages(b) for b in batches_by_queue(msgs)]


def stored_one_by_one(store: MessageStore, msgs: list[MessageInner]) -> list[PutResult]:
    """One message per append, the queues in turn: no two records of a queue adjacent."""
    return [store.put_message(m) for m in msgs]


def stored_in_turn(store: MessageStore, msgs: list[MessageInner]) -> list[PutResult]:
    """Batches of 500 of one queue, the queues in turn (a batching producer's log): a pull
    of 1,024 spans three runs."""
    queues = by_queue(msgs)
    turns = [q[i : i + 500] for i in range(0, max(map(len, queues)), 500) for q in queues]
    return [store.put_messages(b) for b in turns if b]


@dataclass(frozen=True)
class ReadShape:
    """How the messages were stored, and how many one pull asks for."""

    name: str
    store: Callable[[MessageStore, list[MessageInner]], list[PutResult]]
    pull: int


READ_SHAPES = (
    ReadShape(f"batches of {BATCH} by queue, pulls of {PULL}", stored_by_queue, PULL),
    ReadShape(f"single appends, queues in turn, pulls of {PULL}", stored_one_by_one, PULL),
    ReadShape("batches of 500, queues in turn, pulls of 1,024", stored_in_turn, 1024),
)


def read_config(root: Path, shape: ReadShape) -> StoreConfig:
    """The default ASYNC_FLUSH store, letting a pull return `shape.pull` messages."""
    config = store_config(root, FlushDiskType.ASYNC_FLUSH)
    return replace(config, max_transfer_count=max(shape.pull, config.max_transfer_count))


def drain(store: MessageStore, pull: int) -> int:
    """Read every queue of the benchmark topic to its end, `pull` at a time; messages read."""
    count = 0
    for q in store.queue_ids("BenchTopic"):
        offset, end = 0, store.max_offset("BenchTopic", q)
        while offset < end:
            got = store.get_messages("BenchTopic", q, offset, pull, max_bytes=pull * 1024)
            count += len(got.queue_offsets)
            offset = got.next_begin_offset
    return count


def read_case(base: Path, msgs: list[MessageInner], shape: ReadShape) -> tuple[float, float, int]:
    """(seconds to pull every message by queue, `shape.pull` at a time; seconds for the floor:
    slicing the same records out of the map by known offsets; message count)."""
    root = Path(tempfile.mkdtemp(dir=base))
    store = MessageStore(read_config(root, shape))
    store.open()
    try:
        placed = [(r.commit_log_offset, r.size) for p in shape.store(store, msgs)
                  for r in p.records]  # fmt: skip
        start = time.perf_counter()
        count = drain(store, shape.pull)
        pulled = time.perf_counter() - start
        seg = store._log.chain.segments[0].mm  # the floor reads the same map directly
        start = time.perf_counter()
        for phys, size in placed:
            seg[phys : phys + size]
        floor = time.perf_counter() - start
        assert count == len(msgs)
    finally:
        store.close()
        shutil.rmtree(root)
    return pulled, floor, count


def mmap_vs_pread(base: Path, reads: int = 200_000) -> dict[str, float]:
    """Microseconds per operation: the measurement behind the store's choice of mmap."""
    size = 256 * 1024 * 1024
    path = base / "mmap-vs-pread"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    out: dict[str, float] = {}
    try:
        os.posix_fallocate(fd, 0, size)
        mm = mmap.mmap(fd, size)
        mm[: 64 << 20] = b"r" * (64 << 20)
        rnd = random.Random(1)
        offsets = [rnd.randrange(0, (64 << 20) - 10_000) for _ in range(reads)]
        for label, n in (("300 B", 300), ("9.6 KiB (32 x 300 B)", 9600)):
            start = time.perf_counter()
            for o in offsets:
                os.pread(fd, n, o)
            out[f"pread {label}"] = (time.perf_counter() - start) / reads * 1e6
            start = time.perf_counter()
            for o in offsets:
                mm[o : o + n]
            out[f"mmap slice {label}"] = (time.perf_counter() - start) / reads * 1e6
        rec = b"w" * 300
        pos = 64 << 20
        start = time.perf_counter()
        for i in range(reads):
            os.pwrite(fd, rec, pos + i * 300)
        out["pwrite 300 B append"] = (time.perf_counter() - start) / reads * 1e6
        pos += reads * 300
        start = time.perf_counter()
        for i in range(reads):
            p = pos + i * 300
            mm[p : p + 300] = rec
        out["mmap copy 300 B append"] = (time.perf_counter() - start) / reads * 1e6
        mm.close()
    finally:
        os.close(fd)
        path.unlink()
    return out


def recovery_case(base: Path, gib: float) -> dict[str, float]:
    """Seconds to open a store holding `gib` GiB of 256-byte messages: clean, after a crash
    with a 1-second checkpoint lag, and with no checkpoint (everything re-verified)."""
    root = Path(tempfile.mkdtemp(dir=base))
    cfg = store_config(root, FlushDiskType.ASYNC_FLUSH)
    out: dict[str, float] = {}
    try:
        store = MessageStore(cfg)
        store.open()
        template = make_messages(40_000, 256)
        batches = batches_by_queue(template)
        target = int(gib * (1 << 30))
        start = time.perf_counter()
        marks: list[tuple[float, int]] = []  # (time, offset of a batch's first record)
        while store.max_physical_offset < target - 64 * 1024:
            for b in batches:
                first = store.put_messages(b).records[0].commit_log_offset
                marks.append((time.perf_counter(), first))
                if store.max_physical_offset >= target - 64 * 1024:
                    break
        out["fill seconds"] = time.perf_counter() - start
        out["log bytes"] = store.max_physical_offset
        store.close()

        def reopen() -> tuple[float, int]:
            s = MessageStore(cfg)
            t = time.perf_counter()
            s.open()
            elapsed = time.perf_counter() - t
            records = s.last_recovery.records if s.last_recovery else 0
            s.close()
            return elapsed, records

        out["clean open s"], _ = reopen()
        # A crash one checkpoint interval (1 s) after the last checkpoint, which sat at the
        # first record appended in the fill's last second.
        cp = root / CHECKPOINT_FILE
        saved = cp.read_bytes()
        at = next(offset for t, offset in marks if t >= marks[-1][0] - 1.0)
        cp.write_text(f'{{"commitLogFlushed": {at}, "dispatched": {at}, "timestamp": 0}}')
        (root / ABORT_FILE).touch()
        out["crash open s"], out["crash records"] = reopen()
        cp.unlink()
        (root / ABORT_FILE).touch()
        out["no-checkpoint open s"], out["no-checkpoint records"] = reopen()
        cp.write_bytes(saved)
    finally:
        shutil.rmtree(root)
    return out


def median_runs(
    runs: int, fn: Callable[[], tuple[float, int, int, float]]
) -> tuple[Figure, float, list[float]]:
    """Median figures over runs; also the spread (max/min of msgs/s) and each run's msgs/s."""
    rates = []
    mbs = []
    grouping = []
    for _ in range(runs):
        seconds, count, size, per_sync = fn()
        rates.append(count / seconds)
        mbs.append(size / seconds / 1e6)
        grouping.append(per_sync)
    figure = Figure(statistics.median(rates), statistics.median(mbs), statistics.median(grouping))
    return figure, max(rates) / min(rates), rates


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per case (median reported)")
    parser.add_argument("--messages", type=int, default=200_000, help="messages per async case")
    parser.add_argument("--sync-messages", type=int, default=3_000, help="per SYNC_FLUSH case")
    parser.add_argument("--recovery-gib", type=float, default=1.0, help="0 to skip")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go")
    parser.add_argument("--reads-only", action="store_true", help="only the read rows")
    results.add_json_option(parser, "store_bench")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="longboat-store-bench-", dir=args.dir))
    page, measured = results.Page(), Measured()
    try:
        run(args, base, page, measured)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    sizes = {k: v for k, v in vars(args).items() if k not in ("dir", "json")}
    result = results.record("store_bench", sizes=sizes, runs=measured.rows, page=page.as_dict())
    print(f"\nresult: {results.save(result, args.json)}")


class Measured:
    """Every row's per-run figures, for the result's `runs`."""

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def add(self, row: str, **figures: object) -> None:
        self.rows.append({"row": row, **figures})


# The store's batched appends, the broker's batch path: the rate every invocation must reach.
BATCH_TARGET = 300_000
BATCH_TARGET_ROW = "ASYNC_FLUSH append 256 B, batch of 100, encoded (the broker's batch path)"


def appends_and_syncs(
    args: argparse.Namespace, base: Path, page: results.Page, measured: Measured
) -> None:
    runs = args.runs
    for body_size in (256, 4096):
        n = args.messages if body_size == 256 else args.messages // 8
        msgs = make_messages(n, body_size)
        data = encoded_records(msgs)
        gc.freeze()  # the inputs live all run; a broker's decoded messages are short-lived
        floor_rate = statistics.median(
            len(data) / memcpy_floor(base, data, len(data) // n * BATCH) / 1e6 for _ in range(runs)
        )
        for label, work in (
            ("single", appends("put_message", msgs, n)),
            ("batch of 100", appends("put_messages", batches_by_queue(msgs), n)),
            (
                "batch of 100, encoded (the broker's batch path)",
                appends("put_encoded_batch", encoded_batches(batches_by_queue(msgs)), n),
            ),
        ):
            fig, spread, rates = median_runs(
                runs, partial(timed_store_run, base, FlushDiskType.ASYNC_FLUSH, work)
            )
            row = f"ASYNC_FLUSH append {body_size} B, {label}"
            measured.add(row, msgs_per_s=rates, floor_mb_per_s=floor_rate)
            page.row(
                row, f"{fig.msgs_per_s:,.0f}", f"{fig.mb_per_s:,.1f}", f"{spread:.2f}x",
                f"{fig.mb_per_s / floor_rate:.3f}x of memcpy into the map "
                f"({floor_rate:,.0f} MB/s)",
            )  # fmt: skip
            if row == BATCH_TARGET_ROW:
                page.target(
                    f"store: {row}, every run (msgs/s)", f">= {BATCH_TARGET:,}",
                    f"{min(rates):,.0f} (the slowest of {len(rates)})",
                    min(rates) >= BATCH_TARGET,
                )  # fmt: skip
        sync_msgs = msgs[: args.sync_messages]
        record = len(data) // n
        floor_seconds = statistics.median(
            fsync_floor(base, min(500, len(sync_msgs)), record) for _ in range(runs)
        )
        fsync_rate = min(500, len(sync_msgs)) / floor_seconds
        for writers in (1, SYNC_WRITERS):
            fig, spread, rates = median_runs(
                runs,
                partial(
                    timed_store_run, base, FlushDiskType.SYNC_FLUSH, append_sync(sync_msgs, writers)
                ),
            )
            row = f"SYNC_FLUSH append {body_size} B, {writers} writer(s), each waits"
            measured.add(row, msgs_per_s=rates, floor_fsyncs_per_s=fsync_rate)
            page.row(
                row, f"{fig.msgs_per_s:,.0f}", f"{fig.mb_per_s:,.1f}", f"{spread:.2f}x",
                f"{fig.msgs_per_s / fsync_rate:.2f}x of write+fdatasync per message "
                f"({fsync_rate:,.0f}/s); {fig.appends_per_sync:.1f} appends per fdatasync",
            )  # fmt: skip


def reads(args: argparse.Namespace, base: Path, page: results.Page, measured: Measured) -> None:
    runs = args.runs
    msgs = make_messages(args.messages, 256)
    gc.freeze()
    for shape in READ_SHAPES:
        samples = [read_case(base, msgs, shape) for _ in range(runs)]
        pulled = statistics.median(c / p for p, _, c in samples)
        floor = statistics.median(c / f for _, f, c in samples)
        row = f"read by queue, 256 B, {shape.name}"
        measured.add(row, pulls_s=[p for p, _, _ in samples], floor_s=[f for _, f, _ in samples],
                     messages=[c for _, _, c in samples])  # fmt: skip
        page.row(
            row, f"{pulled:,.0f}", "", "",
            f"{pulled / floor:.2f}x of slicing the records from the map ({floor:,.0f}/s)",
        )  # fmt: skip


def run(args: argparse.Namespace, base: Path, page: results.Page, measured: Measured) -> None:
    runs = args.runs
    page.table(
        f"median of {runs} runs per row",
        ["workload", "msgs/s", "MB/s (log bytes)", "spread", "vs floor in the same run"],
        ["---", "---:", "---:", "---:", "---"],
    )
    if not args.reads_only:
        appends_and_syncs(args, base, page, measured)
    reads(args, base, page, measured)
    if args.reads_only:
        return
    page.table("mmap vs pread (one core)", ["operation", "us per op"], ["---", "---:"])
    for name, us in mmap_vs_pread(base).items():
        measured.add(name, us_per_op=us)
        page.row(name, f"{us:.2f}")
    if args.recovery_gib > 0:
        rec = recovery_case(base, args.recovery_gib)
        measured.add("recovery", **rec)
        page.table(
            f"recovery of a {rec['log bytes'] / (1 << 30):.2f} GiB log (one run)",
            ["open", "seconds"],
            ["---", "---:"],
        )
        page.row("clean open", f"{rec['clean open s']:.2f}")
        page.row(
            f"open after a crash, checkpoint 1 s behind ({rec['crash records']:,.0f} records "
            "re-verified)",
            f"{rec['crash open s']:.2f}",
        )
        page.row(
            "open with no checkpoint: every record re-verified, queues and index rebuilt "
            f"({rec['no-checkpoint records']:,.0f} records)",
            f"{rec['no-checkpoint open s']:.2f}",
        )
        page.row("(filling it, batched appends)", f"{rec['fill seconds']:.2f}")


if __name__ == "__main__":
    main()
