"""Spark connector benchmark: what reading from and writing to Longboat costs a Spark job.

    python -m bench.spark_bench [--rows 200000] [--runs 3] [--pull-batch 1024]
                                [--reader-only [--against REV] [--tags EXPR] | --encoder-only]

Run from the repository root (Spark's Python workers import this module as `bench.spark_bench`
from the working directory).  A `longboat up` child process serves a 4-queue topic holding
`--rows` 100-byte messages with a tag, a key and a UNIQ_KEY, as the producer sends them; its
`maxTransferCountOnMessageInMemory` is raised to `--pull-batch` so one pull carries that many
messages (RocketMQ's default of 32 is also measured, `longboat-32`).

Cases, each `--runs` times, medians reported; Spark `local[2]`, one session, both sources read
through the same streaming query (`Trigger.AvailableNow`, 4 input partitions, same schema):

* source → noop sink and → Parquet: `longboat` against `synthetic`, an in-memory Arrow source
  that yields slices of a prebuilt record batch (the engine's ceiling for this schema).
  rows/s = rows / the micro-batch's `triggerExecution` time (query start-up excluded);
  ratio = longboat / synthetic, measured in the same run.
* `longboat replayed` → noop: the very batches the connector's reader yields for the topic
  (decoded once, before the runs), read back from memory-mapped Arrow IPC files by a source
  that does nothing else.  Its ratio to `synthetic` is what Spark's own handling of those
  batches costs; the gap from it to `longboat` is the reader and the broker.
* sink: a batch DataFrame of `--rows` 100-byte bodies (from `synthetic`) written to a topic
  with `df.write.format("longboat")` (at-least-once, published by the tasks); rows/s = rows /
  wall time of the write.  Baseline: the same DataFrame into the noop sink.

`--reader-only` and `--encoder-only` time the connector's two ends without Spark (below).  The
full run's cases, ratios and every run's figures go to `bench/results/spark_bench.json`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import StructType

from bench import results
from longboat.spark.arrow import SCHEMA, arrow_schema

TOPIC = "spark-bench"
QUEUES = 4
# The Spark stream's target: the connector at this share of the engine's ceiling, into noop.
STREAM_TARGET = 0.7
BODY = b"o" * 100
SLICE_ROWS = 8192


# ---------------------------------------------------------------------------- synthetic source


@cache
def _prebuilt() -> pa.RecordBatch:
    n = SLICE_ROWS
    schema = arrow_schema()
    ts = pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC"))
    return pa.RecordBatch.from_arrays(
        [
            pa.array([TOPIC] * n, pa.string()),
            pa.array(["broker-a"] * n, pa.string()),
            pa.array([0] * n, pa.int32()),
            pa.array(range(n), pa.int64()),
            pa.array([f"{i:032X}" for i in range(n)], pa.string()),
            pa.array([f"k{i}" for i in range(n)], pa.string()),
            pa.array(["t"] * n, pa.string()),
            pa.array([BODY] * n, pa.binary()),
            ts,
            ts,
            pa.array([0] * n, pa.int32()),
            # The one property a stored message shows there: CLUSTER, which brokers add.
            pa.MapArray.from_arrays(
                pa.array(range(n + 1), pa.int32()),
                pa.array(["CLUSTER"] * n, pa.string()),
                pa.array(["DefaultCluster"] * n, pa.string()),
                type=schema.field("properties").type,
            ),
        ],
        schema=schema,
    )


class Slice(InputPartition):
    def __init__(self, rows: int) -> None:
        self.rows = rows


def _slices(rows: int) -> Any:
    batch = _prebuilt()
    while rows > 0:
        take = min(rows, SLICE_ROWS)
        yield batch.slice(0, take)
        rows -= take


class SyntheticSource(DataSource):
    """An in-memory Arrow source with the `longboat` schema; option `rows`."""

    @classmethod
    def name(cls) -> str:
        return "synthetic"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return SyntheticBatch(int(self.options["rows"]))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return SyntheticStream(int(self.options["rows"]))


class ReplayedSource(DataSource):
    """Arrow IPC files of decoded batches, one input partition each; option `paths`
    (comma-separated)."""

    @classmethod
    def name(cls) -> str:
        return "replayed"

    def schema(self) -> StructType:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ReplayedStream(self.options["paths"].split(","))


class ReplayedFile(InputPartition):
    def __init__(self, path: str) -> None:
        self.path = path


class ReplayedStream(DataSourceStreamReader):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def initialOffset(self) -> dict[str, int]:
        return {"files": 0}

    # Spark still accepts the zero-argument form (no admission control): every file is one
    # offset, all of them in the first micro-batch, as the synthetic stream does.
    def latestOffset(self) -> dict[str, int]:  # type: ignore[override]
        return {"files": len(self.paths)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[ReplayedFile]:
        return [ReplayedFile(p) for p in self.paths[start["files"] : end["files"]]]

    def read(self, partition: InputPartition) -> Any:
        assert isinstance(partition, ReplayedFile)
        with pa.memory_map(partition.path) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)


def longboat_options(namesrv: str) -> dict[str, str]:
    """The options of every read of the topic here (Spark's, the replayed batches', the
    reader's alone): all of it, from the first message."""
    return {"namesrv": namesrv, "topic": TOPIC, "startingOffsets": "earliest"}


def replay_files(namesrv: str, directory: Path) -> list[str]:
    """Every queue of the topic read through the connector's reader, its batches written
    to one Arrow IPC file per queue; their paths."""
    from longboat.spark.options import parse_read_options
    from longboat.spark.source import BatchReader, read_range

    opts = parse_read_options(longboat_options(namesrv), streaming=False)
    reader = BatchReader(opts)
    paths = []
    for i, part in enumerate(reader.partitions()):
        path = str(directory / f"replayed-{i}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, arrow_schema()) as writer:
            for batch in read_range(reader.link, opts, part):
                writer.write_batch(batch)
        paths.append(path)
    return paths


def _split(rows: int) -> list[Slice]:
    share, extra = divmod(rows, QUEUES)
    return [Slice(share + (1 if i < extra else 0)) for i in range(QUEUES)]


class SyntheticBatch(DataSourceReader):
    def __init__(self, rows: int) -> None:
        self.rows = rows

    def partitions(self) -> list[Slice]:
        return _split(self.rows)

    def read(self, partition: InputPartition) -> Any:
        assert isinstance(partition, Slice)
        return _slices(partition.rows)


class SyntheticStream(DataSourceStreamReader):
    def __init__(self, rows: int) -> None:
        self.rows = rows

    def initialOffset(self) -> dict[str, int]:
        return {"rows": 0}

    # The zero-argument form, as ReplayedStream's.
    def latestOffset(self) -> dict[str, int]:  # type: ignore[override]
        return {"rows": self.rows}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[Slice]:
        return _split(end["rows"] - start["rows"])

    def read(self, partition: InputPartition) -> Any:
        assert isinstance(partition, Slice)
        return _slices(partition.rows)


# ---------------------------------------------------------------------------- measuring


def stream_rows_per_s(spark: Any, source: str, options: dict[str, str], sink: str) -> float:
    reader = spark.readStream.format(source)
    for k, v in options.items():
        reader = reader.option(k, v)
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp:
        writer = reader.load().writeStream.option("checkpointLocation", f"{tmp}/cp")
        if sink == "parquet":
            writer = writer.format("parquet").option("path", f"{tmp}/out")
        else:
            writer = writer.format("noop")
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        progress = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in progress)
    seconds = sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000
    return rows / seconds


def write_rows_per_s(spark: Any, rows: int, fmt: str, options: dict[str, str]) -> float:
    df = spark.read.format("synthetic").option("rows", str(rows)).load().select("body", "tags")
    writer = df.write.format(fmt).mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    t0 = time.perf_counter()
    writer.save()
    return rows / (time.perf_counter() - t0)


def produce(namesrv: str, topic: str, rows: int) -> None:
    from longboat.client import ClientConfig, Message
    from longboat.client.sync import Admin, Producer

    config = ClientConfig([namesrv], client_ip="127.0.0.1")
    with Admin(config=config) as admin:
        admin.create_topic(topic, queue_nums=QUEUES)
    with Producer(config=config) as producer:
        for start in range(0, rows, 500):
            producer.send_batch(
                [
                    Message(topic, BODY, tags="t", keys=f"k{i}")
                    for i in range(start, min(rows, start + 500))
                ]
            )


def reader_alone(namesrv: str, runs: int, against: str | None, tags: str | None) -> None:
    """The connector's reader without Spark: every queue read through `read_range` in this
    process (rows/s, this process's CPU per row and the `longboat up` child's, which serves
    the pulls: user and system time, in 10 ms ticks), with the tag filter `tags` when given,
    then the columnar decode alone over the same pull answers, grouped as `read_range` groups
    them; with `against`, alternated with that revision's decoder (`bench.revisions`)."""
    from bench.revisions import module_at
    from longboat.spark.arrow import decode_to_batch
    from longboat.spark.options import parse_read_options
    from longboat.spark.source import ARROW_BATCH_ROWS, BatchReader, read_range

    options = longboat_options(namesrv)
    if tags is not None:
        options["tags"] = tags
    opts = parse_read_options(options, streaming=False)
    reader = BatchReader(opts)
    parts, link = reader.partitions(), reader.link
    servers = psutil.Process().children(recursive=True)  # the `longboat up` child

    def servers_cpu() -> float:
        return sum(sum(p.cpu_times()[:2]) for p in servers)

    for run in range(runs):
        t0, c0, s0 = time.perf_counter(), time.process_time(), servers_cpu()
        rows = sum(b.num_rows for part in parts for b in read_range(link, opts, part))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        served = servers_cpu() - s0
        print(f"read_range {run + 1}: {rows / wall:,.0f} rows/s, {cpu / rows * 1e6:.2f} us CPU/row"
              f" (the broker's: {served / rows * 1e6:.2f})")  # fmt: skip
    grouped = []
    for part in parts:
        offset, bodies, counted = part.start, [], 0
        while offset < part.end:
            got = link.pull_async(part.mq, offset, 1024, opts.tags, opts.pull_group).result()
            bodies.append(got.body)
            counted += got.next_begin_offset - offset
            offset = got.next_begin_offset
            if counted >= ARROW_BATCH_ROWS or offset >= part.end:
                grouped.append((part, b"".join(bodies)))
                bodies, counted = [], 0
    decoders = {"this tree": decode_to_batch}
    if against is not None:
        decoders[against] = module_at(against, "src/longboat/spark/arrow.py").decode_to_batch
    times: dict[str, list[float]] = {name: [] for name in decoders}
    for run in range(runs):
        for name, decode in decoders.items():
            c0, rows = time.process_time(), 0
            for part, body in grouped:
                batch = decode(body, part.topic, part.broker, part.end, None)
                assert batch is not None  # every body here holds rows
                rows += batch.num_rows
            times[name].append((time.process_time() - c0) / rows * 1e6)
            print(f"decode alone {run + 1}, {name}: {times[name][-1]:.2f} us CPU/row")
    if against is not None:
        now, then = statistics.median(times["this tree"]), statistics.median(times[against])
        print(f"decode alone, medians: this tree {now:.2f}, {against} {then:.2f} us CPU/row, "
              f"ratio {now / then:.2f}")  # fmt: skip


def encoder_alone(rows: int, runs: int) -> None:
    """The sink's encode without Spark or a broker, over `rows` of the sink case's rows (the
    synthetic source's body and tags, in its batches), alternately in this process; CPU per
    row and the ratio of the medians, for both ways of publishing:

    * at-least-once (the tasks' sends): column-wise (`sink_encode.encode_chunks`, what the
      sink does) against message by message (`Message`s cut by `sink.chunks` and encoded as
      `Producer.send_batch` does: the sink's path for rows the column path does not take);
    * exactly-once (the driver's sends of a micro-batch, `sink.exactly_once_sends`, keys
      derived per message): the same two ways, each send's body built as it is sent."""
    from longboat.client.producer import Producer
    from longboat.spark.arrow import rows_of
    from longboat.spark.options import DEFAULT_SEND_BATCH_SIZE, WriteOptions
    from longboat.spark.sink import (
        CHUNK_BYTES,
        _column_sends,
        _message_sends,
        _messages,
        chunks,
    )
    from longboat.spark.sink_encode import encode_chunks, reserved_keys

    producer = Producer("spark-bench-encode", namesrv_addrs="127.0.0.1:9876")  # never started
    batches = [_prebuilt().select(["body", "tags"])] * max(1, rows // SLICE_ROWS)
    count = sum(b.num_rows for b in batches)
    opts = WriteOptions("", TOPIC, "g", DEFAULT_SEND_BATCH_SIZE, True, "bench", 10.0)

    def column_wise() -> None:
        for batch in batches:
            encode_chunks(
                batch,
                TOPIC,
                max_count=DEFAULT_SEND_BATCH_SIZE,
                max_body_bytes=CHUNK_BYTES,
                keys=reserved_keys(producer.reserve_uniq_keys),
            )

    def per_message() -> None:
        for batch in batches:
            for chunk in chunks(_messages(rows_of([batch], TOPIC)), DEFAULT_SEND_BATCH_SIZE):
                producer._batch_body(chunk, TOPIC)

    def exactly_once_column_wise() -> None:
        _column_sends("bench", 1, batches, opts, CHUNK_BYTES)

    def exactly_once_per_message() -> None:
        for part in _message_sends("bench", 1, batches, opts, CHUNK_BYTES)[TOPIC]:
            assert isinstance(part, list)
            producer._batch_body(part, TOPIC)

    cases = {
        "at-least-once": (column_wise, per_message),
        "exactly-once": (exactly_once_column_wise, exactly_once_per_message),
    }
    for mode, (cols_encode, msgs_encode) in cases.items():
        times: dict[str, list[float]] = {"column-wise": [], "message by message": []}
        for run in range(runs):
            for name, encode in (("column-wise", cols_encode), ("message by message", msgs_encode)):
                c0 = time.process_time()
                encode()
                times[name].append((time.process_time() - c0) / count * 1e6)
                print(f"{mode} encode {run + 1}, {name}: {times[name][-1]:.2f} us CPU/row")
        cols, msgs = (statistics.median(v) for v in times.values())
        print(f"{mode} encode, medians of {count:,} rows: column-wise {cols:.2f}, message by "
              f"message {msgs:.2f} us CPU/row, ratio {cols / msgs:.2f}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pull-batch", type=int, default=1024)
    parser.add_argument(
        "--reader-only", action="store_true", help="time the connector's reader alone, no Spark"
    )
    parser.add_argument(
        "--against", metavar="REV", help="with --reader-only: alternate the decode with REV's"
    )
    parser.add_argument(
        "--tags", metavar="EXPR", help="with --reader-only: read with this tag filter"
    )
    parser.add_argument(
        "--encoder-only", action="store_true", help="time the sink's encode alone, no Spark"
    )
    results.add_json_option(parser, "spark_bench")
    args = parser.parse_args()
    if args.encoder_only:
        encoder_alone(args.rows, args.runs)
        return
    os.environ["LONGBOAT_MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY"] = str(args.pull_batch)
    os.environ["LONGBOAT_MAX_TRANSFER_BYTES_ON_MESSAGE_IN_MEMORY"] = str(4 * 1024 * 1024)
    from bench import spark_bench as me  # workers import the classes by this name
    from longboat.cli.demo import longboat_up, spark_session
    from longboat.spark import register

    rates: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp, contextlib.ExitStack() as st:
        namesrv = st.enter_context(longboat_up(Path(tmp) / "store"))
        t0 = time.perf_counter()
        produce(namesrv, TOPIC, args.rows)
        print(f"produced {args.rows} messages in {time.perf_counter() - t0:.1f}s", flush=True)
        if args.reader_only:
            reader_alone(namesrv, args.runs, args.against, args.tags)
            return
        replayed = {"paths": ",".join(replay_files(namesrv, Path(tmp)))}
        spark = spark_session()
        st.callback(spark.stop)
        register(spark)
        spark.dataSource.register(me.SyntheticSource)
        spark.dataSource.register(me.ReplayedSource)
        lb = longboat_options(namesrv)
        lb32 = dict(lb, pullBatchSize="32")
        syn = {"rows": str(args.rows)}
        stream_rows_per_s(spark, "longboat", lb, "noop")  # warm-up: workers, JIT, caches
        stream_rows_per_s(spark, "synthetic", syn, "noop")
        stream_rows_per_s(spark, "replayed", replayed, "noop")
        write_rows_per_s(spark, args.rows, "longboat", {"namesrv": namesrv, "topic": f"{TOPIC}-w"})
        for run in range(args.runs):
            for sink in ("noop", "parquet"):
                for name, source, opts in (
                    ("synthetic", "synthetic", syn),
                    ("longboat", "longboat", lb),
                    ("longboat-32", "longboat", lb32),
                ):
                    value = stream_rows_per_s(spark, source, opts, sink)
                    rates.setdefault(f"{name} → {sink}", []).append(value)
                if sink == "noop":
                    rates.setdefault("longboat replayed → noop", []).append(
                        stream_rows_per_s(spark, "replayed", replayed, sink)
                    )
            sink_topic = f"{TOPIC}-sink-{run}"
            rates.setdefault("synthetic → noop (batch write)", []).append(
                write_rows_per_s(spark, args.rows, "noop", {})
            )
            rates.setdefault("synthetic → longboat sink", []).append(
                write_rows_per_s(
                    spark, args.rows, "longboat", {"namesrv": namesrv, "topic": sink_topic}
                )
            )
            print(f"run {run + 1}/{args.runs} done", flush=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\nrows={args.rows} runs={args.runs} pull batch={args.pull_batch}, Spark local[2]")
    print(f"{'case':40} {'median rows/s':>14}  {'runs':>30}")
    for k, v in rates.items():
        print(f"{k:40} {med[k]:>14,.0f}  {', '.join(f'{x:,.0f}' for x in v):>30}")
    ratios = [
        ("longboat replayed/synthetic → noop", "longboat replayed → noop", "synthetic → noop"),
        *(
            (f"{name}/synthetic → {sink}", f"{name} → {sink}", f"synthetic → {sink}")
            for sink in ("noop", "parquet")
            for name in ("longboat", "longboat-32")
        ),
        ("longboat sink/noop (batch write)", "synthetic → longboat sink",
         "synthetic → noop (batch write)"),
    ]  # fmt: skip
    page = results.Page()
    page.table("cases", ["case", "median rows/s", "runs"], ["---", "---:", "---"])
    for k, v in rates.items():
        page.row(k, f"{med[k]:,.0f}", ", ".join(f"{x:,.0f}" for x in v))
    page.table("ratios", ["ratio", "of the medians", "per-run median"], ["---", "---:", "---:"])
    for label, case, base in ratios:
        of_medians, per_run = ratio(rates, case, base)
        print(f"ratio {label}: {of_medians:.2f} (per-run median {per_run:.2f})")
        page.row(label, f"{of_medians:.2f}", f"{per_run:.2f}")
        if label == "longboat/synthetic → noop":
            page.target(
                "Spark stream ÷ the synthetic Arrow source, into noop", f">= {STREAM_TARGET}",
                f"{of_medians:.2f}", of_medians >= STREAM_TARGET,
            )  # fmt: skip
    sizes = {"rows": args.rows, "runs": args.runs, "pull_batch": args.pull_batch}
    runs = [{k: v[i] for k, v in rates.items()} for i in range(args.runs)]
    result = results.record("spark_bench", sizes=sizes, runs=runs, page=page.as_dict())
    print(f"result: {results.save(result, args.json)}")
    sys.stdout.flush()


def ratio(rates: dict[str, list[float]], case: str, base: str) -> tuple[float, float]:
    """The ratio of the medians, and the median of the per-run ratios."""
    per_run = [a / b for a, b in zip(rates[case], rates[base], strict=True)]
    of_medians = statistics.median(rates[case]) / statistics.median(rates[base])
    return of_medians, statistics.median(per_run)


if __name__ == "__main__":
    main()
