"""Run the streaming job until stopped: order events → per-minute revenue by region (Parquet)
and large-order alerts (another topic, published exactly once).

    python examples/revenue_stream.py --namesrv 127.0.0.1:9876 --out revenue-job

The job itself is `longboat.demo.revenue_stream`; here it triggers every second instead of
stopping once it has caught up, as `longboat demo` does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pyspark.sql import SparkSession

from longboat.demo.revenue_stream import start_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--orders", default="orders")
    parser.add_argument("--alerts", default="order-alerts")
    parser.add_argument("--out", type=Path, default=Path("revenue-job"))
    args = parser.parse_args()
    spark = SparkSession.builder.master("local[2]").appName("revenue").getOrCreate()
    for query in start_pipeline(
        spark, args.namesrv, args.orders, args.alerts, args.out, available_now=False
    ):
        print(f"started {query.name}")
    spark.streams.awaitAnyTermination()


if __name__ == "__main__":
    main()
