"""The sink: batch writes, at-least-once and exactly-once streams across a replayed batch."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

from longboat.spark.connection import link
from longboat.spark.options import parse_write_options
from longboat.spark.sink import ExactlyOncePublisher, exactly_once_sends
from spark.conftest import SparkCluster

pytestmark = pytest.mark.spark


def bodies(spark: Any, namesrv: str, topic: str) -> Counter[bytes]:
    df = spark.read.format("longboat").option("namesrv", namesrv).option("topic", topic).load()
    return Counter(r.body for r in df.select("body").collect())


@pytest.mark.parametrize("properties", [False, True], ids=["column-wise", "message-by-message"])
def test_batch_write_publishes_every_row(
    spark, spark_cluster: SparkCluster, properties: bool
) -> None:
    """Every sink column lands: body, tags, keys, properties, and a row's own `topic`
    (rows with none go to the `topic` option's).  Without property maps the tasks encode
    column-wise (`sink_encode`); with them, message by message."""
    topic, other = spark_cluster.new_topic(queues=2), spark_cluster.new_topic(queues=1)
    rows = [
        (
            f"order-{i}",
            "eu" if i % 2 else "us",
            f"key{i}",
            {"n": str(i)},
            other if i % 4 == 0 else None,
        )
        for i in range(40)
    ]
    df = spark.createDataFrame(
        rows, "body string, tags string, keys string, properties map<string,string>, topic string"
    )
    if not properties:
        df = df.drop("properties")
    df.write.format("longboat").option("namesrv", spark_cluster.namesrv).option(
        "topic", topic
    ).mode("append").save()

    def read_back(name: str) -> list:
        return (
            spark.read.format("longboat")
            .option("namesrv", spark_cluster.namesrv)
            .option("topic", name)
            .load()
            .collect()
        )

    back, elsewhere = read_back(topic), read_back(other)
    assert sorted(r.body.decode() for r in elsewhere) == sorted(
        f"order-{i}" for i in range(0, 40, 4)
    )
    assert sorted(r.body.decode() for r in back) == sorted(f"order-{i}" for i in range(40) if i % 4)
    for r in back + elsewhere:
        i = int(r.body.decode().split("-")[1])
        assert r.tags == ("eu" if i % 2 else "us") and r.keys == f"key{i}"
        assert r.properties.get("n") == (str(i) if properties else None)


def test_sink_rejects_unusable_frames(spark, spark_cluster: SparkCluster) -> None:
    df = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(PySparkException, match="body"):
        df.write.format("longboat").option("namesrv", spark_cluster.namesrv).option(
            "topic", "x"
        ).mode("append").save()
    df = spark.createDataFrame([("a",)], "body string")
    with pytest.raises(PySparkException, match="exactlyOnce"):
        df.write.format("longboat").option("namesrv", spark_cluster.namesrv).option(
            "topic", "x"
        ).option("exactlyOnce", "true").option("sinkId", "s").mode("append").save()


def _pipe_with_replay(
    spark: Any, cluster: SparkCluster, tmp_path: Path, **sink_options: str
) -> Counter[bytes]:
    """Copy 30 messages from one topic to another in 3 micro-batches, then make Spark replay
    the last batch (as after a crash between the sink's commit and Spark's commit log)."""
    source, target = cluster.new_topic(queues=2), cluster.new_topic(queues=2)
    cluster.produce(source, 30)
    checkpoint = tmp_path / "cp"

    def run() -> None:
        df = (
            spark.readStream.format("longboat")
            .option("namesrv", cluster.namesrv)
            .option("topic", source)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "10")
            .load()
            .select("body", "tags")
        )
        writer = df.writeStream.format("longboat").option("namesrv", cluster.namesrv)
        writer = writer.option("topic", target).option("checkpointLocation", str(checkpoint))
        for k, v in sink_options.items():
            writer = writer.option(k, v)
        query = writer.trigger(availableNow=True).start()
        assert query.awaitTermination(120)
        assert query.exception() is None

    run()
    commits = sorted(
        (checkpoint / "commits").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1
    )
    last = commits[-1]
    os.remove(last)
    crc = last.parent / f".{last.name}.crc"
    if crc.exists():
        os.remove(crc)
    run()
    return bodies(spark, cluster.namesrv, target)


def test_stream_sink_at_least_once_republishes_a_replayed_batch(
    spark, spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    got = _pipe_with_replay(spark, spark_cluster, tmp_path)
    assert set(got) == {f"m{i}".encode() for i in range(30)}
    assert sum(got.values()) == 40  # the replayed batch of 10 arrived twice


def test_stream_sink_exactly_once_across_a_replayed_batch(
    spark, spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    got = _pipe_with_replay(
        spark, spark_cluster, tmp_path, exactlyOnce="true", sinkId=f"s-{tmp_path.name}"
    )
    assert got == Counter({f"m{i}".encode(): 1 for i in range(30)})


@pytest.mark.parametrize("odd_maps", [False, True], ids=["column-wise", "message-by-message"])
def test_exactly_once_resumes_a_partly_published_batch(
    spark, spark_cluster: SparkCluster, odd_maps: bool
) -> None:
    """Two of five chunks stored by an attempt that died: the publish sends the other three,
    a replay none, whichever way the micro-batch is encoded (a property map naming TAGS sends
    it message by message)."""
    topic = spark_cluster.new_topic(queues=2)
    opts = parse_write_options(
        {
            "namesrv": spark_cluster.namesrv,
            "topic": topic,
            "exactlyonce": "true",
            "sinkid": f"p-{topic}",
            "sendbatchsize": "5",
        },
        streaming=True,
    )
    columns = {"body": [f"b{i}".encode() for i in range(22)]}
    if odd_maps:
        columns["properties"] = pa.array([[("TAGS", "x")]] * 22, pa.map_(pa.string(), pa.string()))
    batch = pa.RecordBatch.from_pydict(columns)
    publisher = ExactlyOncePublisher(link(opts.namesrv, opts.request_timeout), opts)
    sends = exactly_once_sends(publisher.sink_id, 7, [batch], opts)[topic]
    assert isinstance(sends[0], list) == odd_maps
    for c in (0, 1):  # the first attempt
        publisher._send_chunk(7, topic, c, sends[c])
    publisher.publish(7, [batch])
    publisher.publish(7, [batch])  # and a replay after the marker was written
    got = bodies(spark, spark_cluster.namesrv, topic)
    assert got == Counter({f"b{i}".encode(): 1 for i in range(22)})
