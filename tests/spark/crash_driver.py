"""A Spark driver for the SIGKILL test: topic → Parquet, run until killed or caught up.

    python -m spark.crash_driver NAMESRV TOPIC OUT CHECKPOINT (run|finish)    (from tests/)

`run` streams with a small cap per micro-batch until it is killed; `finish` restarts from the
checkpoint with Trigger.AvailableNow and exits once it has caught up.
"""

from __future__ import annotations

import sys
from pathlib import Path

from longboat.spark import register
from spark.spark_session import build_session


def main() -> None:
    namesrv, topic, out, checkpoint, mode = sys.argv[1:6]
    spark = build_session("local[2]", scratch=Path(checkpoint).parent / f"spark-scratch-{mode}")
    register(spark)
    df = (
        spark.readStream.format("longboat")
        .option("namesrv", namesrv)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
        .select("queue_id", "queue_offset", "body")
    )
    writer = (
        df.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
    )
    if mode == "finish":
        writer.trigger(availableNow=True).start().awaitTermination()
    else:
        writer.trigger(processingTime="0 seconds").start().awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
