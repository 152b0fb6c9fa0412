"""The streaming job: order events → per-minute revenue by region (Parquet) and large-order
alerts (another topic, published exactly once).

Append mode with a one-minute watermark: a minute's row is written once no event for it can
still arrive, so the Parquet output never changes after the fact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from longboat.demo.orders import ORDER_SCHEMA

LARGE_ORDER = 500.0
# The job's progress is written to the broker as this consumer group's offsets.
PROGRESS_GROUP = "revenue-job"


def order_stream(spark: SparkSession, namesrv: str, topic: str, **options: str) -> DataFrame:
    """Parsed order events with their event time, from a Longboat topic."""
    reader = (
        spark.readStream.format("longboat")
        .option("namesrv", namesrv)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load()
        .select(F.from_json(F.col("body").cast("string"), ORDER_SCHEMA).alias("o"))
        .select("o.*")
        .withColumn("event_time", (F.col("ts") / 1000).cast("timestamp"))
    )


def revenue_per_minute(orders: DataFrame) -> DataFrame:
    return (
        orders.withWatermark("event_time", "1 minute")
        .groupBy(F.window("event_time", "1 minute").alias("w"), "region")
        .agg(F.round(F.sum("amount"), 2).alias("revenue"), F.count("*").alias("orders"))
        .select(F.col("w.start").alias("minute"), "region", "revenue", "orders")
    )


def large_order_alerts(orders: DataFrame, threshold: float = LARGE_ORDER) -> DataFrame:
    """Rows for the Longboat sink: a JSON body, the region as tag, the order id as key."""
    return orders.where(F.col("amount") >= threshold).select(
        F.to_json(F.struct("order_id", "region", "customer", "amount", "ts")).alias("body"),
        F.col("region").alias("tags"),
        F.col("order_id").alias("keys"),
    )


def start_pipeline(
    spark: SparkSession,
    namesrv: str,
    orders_topic: str,
    alerts_topic: str,
    workdir: Path,
    *,
    available_now: bool = True,
    max_per_trigger: int = 2000,
) -> list[Any]:
    """Start both queries; their checkpoints live under `workdir`, so a restart resumes."""
    cap = {"maxOffsetsPerTrigger": str(max_per_trigger)}
    # Only the revenue query reports progress: one group, one writer of its offsets.
    revenue = (
        revenue_per_minute(
            order_stream(spark, namesrv, orders_topic, consumerGroup=PROGRESS_GROUP, **cap)
        )
        .writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(workdir / "revenue"))
        .option("checkpointLocation", str(workdir / "checkpoints" / "revenue"))
    )
    alerts = (
        large_order_alerts(order_stream(spark, namesrv, orders_topic, **cap))
        .writeStream.format("longboat")
        .option("namesrv", namesrv)
        .option("topic", alerts_topic)
        .option("exactlyOnce", "true")
        .option("sinkId", f"alerts-{orders_topic}")
        .option("checkpointLocation", str(workdir / "checkpoints" / "alerts"))
    )
    queries = []
    for name, writer in (("revenue", revenue), ("alerts", alerts)):
        writer = writer.queryName(name)
        writer = (
            writer.trigger(availableNow=True)
            if available_now
            else writer.trigger(processingTime="1 second")
        )
        queries.append(writer.start())
    return queries
