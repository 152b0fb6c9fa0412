"""A Spark driver for the standalone-cluster test, run against `spark://...`:

    python -m spark.cluster_driver MASTER NAMESRV TOPIC RESULT_JSON OUT CHECKPOINT   (from tests/)

First a batch job reads the topic with minPartitions and writes, as JSON, the row count and
which executor process read each partition; then a stream copies the topic to Parquet with
exactly-once file output, a few offsets per micro-batch, under Trigger.AvailableNow (one
driver for both: a Spark driver and its executors start slowly).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longboat.spark import register
from spark.spark_session import build_session


def executor_of(rows: Iterator[Any]) -> Iterator[tuple[int, int]]:
    """(the executor JVM's pid, rows in this partition): a Python worker's parent is the
    PySpark daemon, whose parent is the executor."""
    import psutil

    daemon = psutil.Process().parent()
    executor = daemon.parent() if daemon is not None else None
    yield (executor.pid if executor is not None else -1, sum(1 for _ in rows))


def main() -> None:
    master, namesrv, topic, result, out, checkpoint = sys.argv[1:7]
    spark = build_session(master, scratch=Path(checkpoint).parent / "spark-scratch", cluster=True)
    register(spark)

    def source(reader: Any) -> Any:
        return (
            reader.format("longboat")
            .option("namesrv", namesrv)
            .option("topic", topic)
            .option("startingOffsets", "earliest")
            .option("minPartitions", "8")
            .load()
        )

    df = source(spark.read)
    per_partition = df.rdd.mapPartitions(executor_of).collect()
    with open(result, "w") as file:
        json.dump({"partitions": per_partition, "rows": df.count()}, file)
    (
        source(spark.readStream.option("maxOffsetsPerTrigger", "60"))
        .select("broker", "queue_id", "queue_offset", "body")
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
        .awaitTermination()
    )
    spark.stop()


if __name__ == "__main__":
    main()
