"""The SparkSession every Spark test process uses: local, quiet, workers on this Python."""

from __future__ import annotations

import os
import sys
from typing import Any


def build_session(master: str = "local[2]", *, cluster: bool = False) -> Any:
    """`cluster`: a standalone master's executors, small (one core, 512 MiB each)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder
    if cluster:
        builder = (
            builder.config("spark.executor.memory", "512m")
            .config("spark.executor.cores", "1")
            .config("spark.cores.max", "2")
            .config("spark.driver.host", "127.0.0.1")
        )
    return (
        builder.master(master)
        .appName("longboat-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
