"""A Spark driver that registers nothing: it reads a topic with `format("longboat")` and prints
how many rows it got, so only the installed `pyspark_longboat` can make the format known.

    python -m spark.fresh_driver NAMESRV TOPIC SCRATCH    (from tests/)
"""

from __future__ import annotations

import sys
from pathlib import Path

from spark.spark_session import build_session


def main() -> None:
    namesrv, topic, scratch = sys.argv[1:4]
    spark = build_session("local[1]", scratch=Path(scratch))
    imported_before = "longboat.spark" in sys.modules
    rows = spark.read.format("longboat").option("namesrv", namesrv).option("topic", topic).load()
    print(f"longboat.spark imported before the read: {imported_before}")
    print(f"rows: {rows.count()}")
    spark.stop()


if __name__ == "__main__":
    main()
