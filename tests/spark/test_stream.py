"""Streaming reads: checkpoint and restart, rate caps, AvailableNow, new queues, group progress."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from longboat.spark.progress import offsets_behind_latest
from spark.conftest import SparkCluster, load

pytestmark = pytest.mark.spark


def stream(spark: Any, namesrv: str, **options: str) -> Any:
    return load(spark.readStream, namesrv, **options)


def run_available_now(df: Any, checkpoint: str, sink: Any) -> Any:
    """Run the query with Trigger.AvailableNow until it stops by itself; its progress list."""
    query = (
        sink(df.writeStream.option("checkpointLocation", checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "AvailableNow query did not stop by itself"
    assert query.exception() is None
    return query.recentProgress


def test_parquet_exactly_once_across_restart(spark, spark_cluster: SparkCluster, tmp_path: Path):
    topic = spark_cluster.new_topic(queues=2)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "cp")
    spark_cluster.produce(topic, 20)

    def to_parquet(w: Any) -> Any:
        return w.format("parquet").option("path", out)

    df = stream(spark, spark_cluster.namesrv, topic=topic, startingOffsets="earliest")
    run_available_now(df.select("queue_id", "queue_offset", "body"), checkpoint, to_parquet)
    spark_cluster.produce(topic, 15, body=lambda i: f"n{i}".encode())
    df = stream(spark, spark_cluster.namesrv, topic=topic, startingOffsets="earliest")
    run_available_now(df.select("queue_id", "queue_offset", "body"), checkpoint, to_parquet)
    rows = spark.read.parquet(out).collect()
    assert len(rows) == 35
    assert len({(r.queue_id, r.queue_offset) for r in rows}) == 35
    assert sorted(r.body for r in rows) == sorted(
        [f"m{i}".encode() for i in range(20)] + [f"n{i}".encode() for i in range(15)]
    )


def test_max_offsets_per_trigger_caps_available_now(
    spark, spark_cluster: SparkCluster, checkpoint: str
) -> None:
    topic = spark_cluster.new_topic(queues=3)
    spark_cluster.produce(topic, 50)
    sizes: list[int] = []
    seen: list[int] = []

    # Once the first batch runs, a producer keeps writing: AvailableNow must still stop, at
    # the high-water marks it saw when it started.
    stop = threading.Event()

    def collect(batch: Any, batch_id: int) -> None:
        rows = batch.select("queue_offset").collect()
        sizes.append(len(rows))
        seen.extend(r.queue_offset for r in rows)
        if batch_id == 0:
            producer.start()

    def keep_producing() -> None:
        while not stop.is_set():
            spark_cluster.produce(topic, 3, body=lambda i: b"late")

    producer = threading.Thread(target=keep_producing, daemon=True)
    df = stream(
        spark,
        spark_cluster.namesrv,
        topic=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger="12",
    )
    try:
        run_available_now(df, checkpoint, lambda w: w.foreachBatch(collect))
    finally:
        stop.set()
        if producer.is_alive():
            producer.join(30)
    assert sizes == [12, 12, 12, 12, 2]
    assert len(seen) == 50


def test_min_offsets_per_trigger_gives_way_to_max_trigger_delay(
    spark, spark_cluster: SparkCluster, checkpoint: str
) -> None:
    """Fewer messages than minOffsetsPerTrigger still arrive, in one micro-batch, once
    maxTriggerDelay has passed (the waiting itself: test_planning.py)."""
    topic = spark_cluster.new_topic(queues=2)
    spark_cluster.produce(topic, 5)
    sizes: list[int] = []
    df = stream(
        spark,
        spark_cluster.namesrv,
        topic=topic,
        startingOffsets="earliest",
        minOffsetsPerTrigger="1000",
        maxTriggerDelay="1s",
    )
    query = (
        df.writeStream.option("checkpointLocation", checkpoint)
        .foreachBatch(lambda batch, _: sizes.append(batch.count()))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        deadline = time.monotonic() + 120
        while sum(sizes) < 5 and time.monotonic() < deadline:
            assert query.exception() is None
            time.sleep(0.2)
    finally:
        query.stop()
    assert [n for n in sizes if n] == [5]


def test_new_queues_are_picked_up(spark, spark_cluster: SparkCluster, checkpoint: str) -> None:
    topic = spark_cluster.new_topic(queues=1)
    spark_cluster.produce(topic, 5)
    got: list[tuple[str, int, int]] = []

    def collect(batch: Any, batch_id: int) -> None:
        got.extend((r.broker, r.queue_id, r.queue_offset) for r in batch.collect())

    def run() -> None:
        df = stream(spark, spark_cluster.namesrv, topic=topic, startingOffsets="earliest")
        run_available_now(df, checkpoint, lambda w: w.foreachBatch(collect))

    run()
    # The topic grows to both brokers and more queues; the restarted query reads them all.
    with spark_cluster.admin() as admin:
        admin.create_topic(topic, queue_nums=2)
    spark_cluster.produce(topic, 12)
    run()
    assert len(got) == 17 and len(set(got)) == 17
    assert {(b, q) for b, q, _ in got} == {
        ("spark-a", 0),
        ("spark-a", 1),
        ("spark-b", 0),
        ("spark-b", 1),
    }


def test_consumer_group_progress_visible_to_admin(
    spark, spark_cluster: SparkCluster, checkpoint: str
) -> None:
    topic = spark_cluster.new_topic(queues=2)
    spark_cluster.produce(topic, 30)
    group = f"g-{topic}"
    df = stream(
        spark,
        spark_cluster.namesrv,
        topic=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger="10",
        consumerGroup=group,
    )
    progress = run_available_now(df, checkpoint, lambda w: w.format("noop"))
    assert [p["numInputRows"] for p in progress if p["numInputRows"]] == [10, 10, 10]
    with spark_cluster.admin() as admin:
        rows = admin.group_progress(group, topic)
    # Spark commits a micro-batch to the source when it plans the next one, so the group
    # stands at the end of the second batch: 20 consumed, 10 of lag.
    assert sum(r.consumer_offset or 0 for r in rows) == 20
    assert sum(r.lag or 0 for r in rows) == 10
    # Kafka's offsets-behind-latest figures, from the progress: after the first batch of
    # 10 (5 + 5 of 15 + 15), each queue has 10 to go; after the last, none.
    figures = [offsets_behind_latest(p["sources"][0]) for p in progress if p["numInputRows"]]
    assert figures[0] == {
        "minOffsetsBehindLatest": 10.0,
        "maxOffsetsBehindLatest": 10.0,
        "avgOffsetsBehindLatest": 10.0,
    }
    assert figures[-1]["maxOffsetsBehindLatest"] == 0.0


def test_stream_data_loss_fails_or_skips(
    spark, expired_head: tuple[str, str, str], tmp_path: Path
) -> None:
    namesrv, topic, start = expired_head
    df = stream(spark, namesrv, topic=topic, startingOffsets=start)
    query = df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "a"))
    query = query.trigger(availableNow=True).start()
    with pytest.raises(Exception, match="DataLossError"):
        query.awaitTermination(120)
    got: list[int] = []
    df = stream(spark, namesrv, topic=topic, startingOffsets=start, failOnDataLoss="false")
    run_available_now(
        df,
        str(tmp_path / "b"),
        lambda w: w.foreachBatch(
            lambda b, _id: got.extend(r.queue_offset for r in b.select("queue_offset").collect())
        ),
    )
    assert 0 < len(got) < 60 and sorted(got) == list(range(60 - len(got), 60))
