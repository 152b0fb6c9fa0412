"""Batch reads: ranges by offsets and by time, tag filters, two brokers, data loss, bad options."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException

from longboat.spark.options import OptionError, parse_read_options
from spark.conftest import SparkCluster, load

pytestmark = pytest.mark.spark
TESTS = Path(__file__).resolve().parent.parent


def read(spark: Any, namesrv: str, **options: str) -> Any:
    return load(spark.read, namesrv, **options)


def test_batch_reads_every_message_intact(spark, spark_cluster: SparkCluster) -> None:
    topic = spark_cluster.new_topic(queues=2)
    spark_cluster.produce(topic, 20)
    rows = read(spark, spark_cluster.namesrv, topic=topic).collect()
    assert sorted(r.body for r in rows) == sorted(f"m{i}".encode() for i in range(20))
    first = rows[0]
    assert first.topic == topic and first.broker == "spark-a"
    assert first.keys.startswith("k") and first.msg_id and len(first.msg_id) == 32
    assert first.born_timestamp is not None and first.store_timestamp is not None
    assert first.reconsume_times == 0
    assert not {"KEYS", "UNIQ_KEY", "TAGS"} & set(first.properties)
    assert {(r.queue_id, r.queue_offset) for r in rows} == {
        (q, o) for q in (0, 1) for o in range(10)
    }


def test_starting_and_ending_offsets_and_split_ranges(spark, spark_cluster: SparkCluster) -> None:
    topic = spark_cluster.new_topic(queues=2)
    spark_cluster.produce(topic, 40)
    df = read(
        spark,
        spark_cluster.namesrv,
        topic=topic,
        startingOffsets=json.dumps({topic: {"spark-a:0": 3, "spark-a:1": -2}}),
        endingOffsets=json.dumps({topic: {"spark-a:0": 17, "spark-a:1": -1}}),
        maxOffsetsPerPartition="4",
    )
    assert df.rdd.getNumPartitions() == 4 + 5  # 14 offsets of queue 0, 20 of queue 1
    got = sorted(
        (r.queue_id, r.queue_offset) for r in df.select("queue_id", "queue_offset").collect()
    )
    assert got == [(0, o) for o in range(3, 17)] + [(1, o) for o in range(20)]


def test_starting_and_ending_timestamps(spark, spark_cluster: SparkCluster) -> None:
    topic = spark_cluster.new_topic(queues=2)
    spark_cluster.produce(topic, 6, body=lambda i: b"before")
    time.sleep(0.01)  # store times are in ms: put the boundaries between the phases
    t1 = int(time.time() * 1000)
    time.sleep(0.01)
    spark_cluster.produce(topic, 8, body=lambda i: b"inside")
    time.sleep(0.01)
    t2 = int(time.time() * 1000)
    time.sleep(0.01)
    spark_cluster.produce(topic, 4, body=lambda i: b"after")
    rows = read(
        spark,
        spark_cluster.namesrv,
        topic=topic,
        startingTimestamp=str(t1),
        endingTimestamp=str(t2),
    ).collect()
    assert [r.body for r in rows] == [b"inside"] * 8


def test_offsets_by_timestamp_per_queue_and_min_partitions(
    spark, spark_cluster: SparkCluster
) -> None:
    """Kafka's startingOffsetsByTimestamp / endingOffsetsByTimestamp, one time per queue (a
    queue not named starts at its beginning), and minPartitions splitting the result."""
    topic = spark_cluster.new_topic(queues=2)
    spark_cluster.produce(topic, 6, body=lambda i: b"before")
    time.sleep(0.01)
    t1 = int(time.time() * 1000)
    time.sleep(0.01)
    spark_cluster.produce(topic, 8, body=lambda i: b"inside")
    time.sleep(0.01)
    t2 = int(time.time() * 1000)
    time.sleep(0.01)
    spark_cluster.produce(topic, 4, body=lambda i: b"after")
    df = read(
        spark,
        spark_cluster.namesrv,
        topic=topic,
        startingOffsetsByTimestamp=json.dumps({topic: {"spark-a:0": t1}}),
        endingOffsetsByTimestamp=json.dumps({topic: {"spark-a:0": t2, "spark-a:1": t2}}),
        minPartitions="6",
    )
    # Queue 0 from t1 (4 inside), queue 1 from its start (3 before, 4 inside): 11 offsets in
    # 6 partitions, each queue's share in proportion (2 and 4).
    assert df.rdd.getNumPartitions() == 6
    rows = df.select("queue_id", "body").collect()
    assert sorted((r.queue_id, r.body) for r in rows) == sorted(
        [(0, b"inside")] * 4 + [(1, b"before")] * 3 + [(1, b"inside")] * 4
    )


def test_tag_filter_is_exact(spark, spark_cluster: SparkCluster) -> None:
    topic = spark_cluster.new_topic(queues=2)
    regions = ["eu", "us", "apac"]
    spark_cluster.produce(topic, 30, tags=lambda i: regions[i % 3])
    rows = read(spark, spark_cluster.namesrv, topic=topic, tags="eu || apac").collect()
    assert sorted(r.tags for r in rows) == ["apac"] * 10 + ["eu"] * 10
    assert {int(r.body[1:]) % 3 for r in rows} == {0, 2}


def test_two_brokers_and_topic_pattern(spark, spark_cluster: SparkCluster) -> None:
    topic = spark_cluster.new_topic(queues=2, both_brokers=True)
    spark_cluster.produce(topic, 24)
    df = read(spark, spark_cluster.namesrv, topicPattern=topic.replace("t-", "t.") + "$")
    assert df.rdd.getNumPartitions() == 4  # 2 queues on each broker, read in parallel
    rows = df.collect()
    assert sorted(r.body for r in rows) == sorted(f"m{i}".encode() for i in range(24))
    assert {r.broker for r in rows} == {"spark-a", "spark-b"}


def test_data_loss_fails_or_skips(spark, expired_head: tuple[str, str, str]) -> None:
    namesrv, topic, start = expired_head
    with pytest.raises(PySparkException, match="DataLossError"):
        read(spark, namesrv, topic=topic, startingOffsets=start).collect()
    rows = read(
        spark, namesrv, topic=topic, startingOffsets=start, failOnDataLoss="false"
    ).collect()
    offsets = sorted(r.queue_offset for r in rows)
    assert 0 < len(offsets) < 60 and offsets == list(range(60 - len(offsets), 60))


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"topic": "a"}, "namesrv"),
        ({"namesrv": "x:1"}, "topic"),
        ({"namesrv": "x:1", "topic": "a", "topicPattern": "a.*"}, "topic"),
        ({"namesrv": "x:1", "topic": "a", "startingOffset": "earliest"}, "startingOffset"),
        ({"namesrv": "x:1", "topic": "a", "startingOffsets": "first"}, "startingOffsets"),
        (
            {"namesrv": "x:1", "topic": "a", "startingOffsets": '{"a": {"b0": 1}}'},
            "startingOffsets",
        ),
        ({"namesrv": "x:1", "topic": "a", "failOnDataLoss": "yes"}, "failOnDataLoss"),
        ({"namesrv": "x:1", "topic": "a", "maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger"),
        ({"namesrv": "x:1", "topicPattern": "(unclosed"}, "topicPattern"),
        ({"namesrv": "x:1", "topic": "a", "startingTimestamp": "yesterday"}, "startingTimestamp"),
    ],
)
def test_bad_read_options_fail_naming_the_option(options: dict[str, str], option: str) -> None:
    with pytest.raises(OptionError) as err:
        parse_read_options({k.lower(): v for k, v in options.items()}, streaming=True)
    assert err.value.option.lower() == option.lower()


def test_bad_option_fails_before_reading(spark, spark_cluster: SparkCluster) -> None:
    with pytest.raises(PySparkException, match="maxoffsetspertriger"):
        read(spark, spark_cluster.namesrv, topic="a", maxOffsetsPerTriger="5").collect()
    with pytest.raises(PySparkException, match="maxoffsetspertriger"):
        spark.readStream.format("longboat").option("namesrv", "x:1").option(
            "maxOffsetsPerTriger", "5"
        ).load()
    stream = (
        spark.readStream.format("longboat")
        .option("namesrv", spark_cluster.namesrv)
        .option("topic", "a")
        .option("endingOffsets", "latest")
        .load()
    )
    with pytest.raises(PySparkException, match="endingOffsets"):
        stream.writeStream.format("noop").start().awaitTermination(60)


def test_compressed_and_plain_bodies_in_one_range(spark, spark_cluster: SparkCluster) -> None:
    topic = spark_cluster.new_topic(queues=1)
    big = bytes(range(256)) * 64  # over the producer's compression threshold
    spark_cluster.produce(topic, 6, body=lambda i: big + bytes([i]) if i % 2 else b"small%d" % i)
    rows = read(spark, spark_cluster.namesrv, topic=topic).orderBy("queue_offset").collect()
    assert [r.body for r in rows] == [
        big + bytes([i]) if i % 2 else b"small%d" % i for i in range(6)
    ]


def test_format_is_registered_by_installing_the_package(
    spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    # A fresh interpreter and JVM that never call register(): pyspark_longboat's DefaultSource,
    # found on the Python path, is what makes the format known there.
    topic = spark_cluster.new_topic(queues=1)
    spark_cluster.produce(topic, 3)
    driver = subprocess.run(
        [sys.executable, "-m", "spark.fresh_driver", spark_cluster.namesrv, topic, str(tmp_path)],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert driver.returncode == 0, driver.stderr[-3000:]
    assert "longboat.spark imported before the read: False" in driver.stdout, driver.stdout
    assert "rows: 3" in driver.stdout, driver.stdout
