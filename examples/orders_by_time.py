"""The batch job: read back the orders the broker stored in a time range, revenue by region.

    python examples/orders_by_time.py --namesrv 127.0.0.1:9876 --since-minutes 10

Store time (when the broker took the message) selects the range: `startingTimestamp` /
`endingTimestamp` become, per queue, the first offset stored at or after each time.
"""

from __future__ import annotations

import argparse
import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ORDER_SCHEMA = "order_id string, region string, customer string, amount double, ts long"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--since-minutes", type=float, default=10.0)
    args = parser.parse_args()
    spark = SparkSession.builder.master("local[2]").appName("orders-by-time").getOrCreate()
    end = int(time.time() * 1000)
    start = end - int(args.since_minutes * 60_000)
    revenue_by_region(orders_between(spark, args.namesrv, args.topic, start, end)).show()


if __name__ == "__main__":
    main()
