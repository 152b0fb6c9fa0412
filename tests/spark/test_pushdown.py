"""Filter pushdown on batch reads (the read option filterPushdown=true with the session's
spark.sql.python.filterPushdown.enabled): each selective query returns what the unpushed
query returns, while the broker hands out fewer messages (its msgGetTotalTodayNow, counted
per message pulled)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from pyspark.sql import functions as F

from spark.conftest import SparkCluster, load

pytestmark = pytest.mark.spark
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
MESSAGES = 240


@pytest.fixture(scope="module")
def topic_and_middle(spark_cluster: SparkCluster) -> tuple[str, datetime]:
    """A topic of 4 queues: tags eu/us/apac in turn, keys k0..; and a time between its halves."""
    topic = spark_cluster.new_topic(queues=4)
    regions = ["eu", "us", "apac"]
    spark_cluster.produce(topic, MESSAGES // 2, tags=lambda i: regions[i % 3])
    time.sleep(0.05)
    middle = datetime.now()
    time.sleep(0.05)
    spark_cluster.produce(
        topic, MESSAGES // 2, tags=lambda i: regions[i % 3], body=lambda i: f"late{i}".encode()
    )
    return topic, middle


@pytest.fixture
def pushdown(spark: Any) -> Iterator[Callable[[bool], None]]:
    def switch(on: bool) -> None:
        spark.conf.set(PUSHDOWN, "true" if on else "false")

    yield switch
    spark.conf.unset(PUSHDOWN)


def pulled(cluster: SparkCluster) -> int:
    with cluster.admin() as admin:
        return int(admin.broker_runtime(cluster.cluster.broker_addr)["msgGetTotalTodayNow"])


QUERIES: dict[str, Callable[[Any, datetime], Any]] = {
    "tags = eu": lambda c, t: c("tags") == "eu",
    "tags IN (us, apac)": lambda c, t: c("tags").isin("us", "apac"),
    "queue_id IN (1, 2) AND queue_offset >= 40": lambda c, t: (
        c("queue_id").isin(1, 2) & (c("queue_offset") >= 40)
    ),
    "queue_id < 1": lambda c, t: c("queue_id") < 1,
    "store_timestamp >= middle": lambda c, t: c("store_timestamp") >= F.lit(t),
    "keys = k7": lambda c, t: c("keys") == "k7",
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_a_pushed_filter_reads_less_and_returns_the_same(
    spark: Any,
    spark_cluster: SparkCluster,
    topic_and_middle: tuple[str, datetime],
    pushdown: Callable[[bool], None],
    name: str,
) -> None:
    topic, middle = topic_and_middle
    condition = QUERIES[name](F.col, middle)

    def run(on: bool) -> tuple[list[tuple[int, int, bytes]], int]:
        pushdown(on)
        before = pulled(spark_cluster)
        options = {"filterPushdown": "true"} if on else {}
        df = load(spark.read, spark_cluster.namesrv, topic=topic, **options).filter(condition)
        rows = sorted((r.queue_id, r.queue_offset, r.body) for r in df.collect())
        return rows, pulled(spark_cluster) - before

    plain, plain_pulled = run(False)
    pushed, pushed_pulled = run(True)
    assert pushed == plain and plain, name
    assert plain_pulled == MESSAGES
    assert pushed_pulled < plain_pulled, (name, pushed_pulled)


def test_pushdown_asked_without_the_session_setting_fails_naming_it(
    spark: Any, spark_cluster: SparkCluster, topic_and_middle: tuple[str, datetime]
) -> None:
    topic, _ = topic_and_middle
    df = load(spark.read, spark_cluster.namesrv, topic=topic, filterPushdown="true")
    with pytest.raises(Exception, match=PUSHDOWN.replace(".", r"\.")):
        df.filter(F.col("tags") == "eu").collect()
