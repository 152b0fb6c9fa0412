"""Run the batch job: revenue by region of the orders the broker stored in the last minutes.

    python examples/orders_by_time.py --namesrv 127.0.0.1:9876 --since-minutes 10

The job itself is `longboat.demo.orders_by_time`.
"""

from __future__ import annotations

import argparse
import time

from pyspark.sql import SparkSession

from longboat.demo.orders_by_time import orders_between, revenue_by_region


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
