"""The batch job: read back the orders the broker stored in a time range, revenue by region.

Store time (when the broker took the message) selects the range: `startingTimestamp` /
`endingTimestamp` become, per queue, the first offset stored at or after each time.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from longboat.demo.orders import ORDER_SCHEMA


def orders_between(
    spark: SparkSession, namesrv: str, topic: str, start_ms: int, end_ms: int
) -> DataFrame:
    return (
        spark.read.format("longboat")
        .option("namesrv", namesrv)
        .option("topic", topic)
        .option("startingTimestamp", str(start_ms))
        .option("endingTimestamp", str(end_ms))
        .load()
        .select(F.from_json(F.col("body").cast("string"), ORDER_SCHEMA).alias("o"), "tags")
        .select("o.*", "tags")
    )


def revenue_by_region(orders: DataFrame) -> DataFrame:
    return (
        orders.groupBy("region")
        .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"))
        .orderBy("region")
    )
