"""The SparkSession every Spark test process uses: local, quiet, workers on this Python."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any


def build_session(master: str = "local[2]", *, scratch: Path, cluster: bool = False) -> Any:
    """`scratch`: where Spark and its JVMs put temporary files (shuffle blocks, the files it
    ships to workers, native libraries it unpacks), instead of /tmp, so the test run's own
    directories hold them and nothing outlives them.  `cluster`: a standalone master's
    executors, small (one core, 512 MiB each)."""
    from pyspark.sql import SparkSession

    scratch.mkdir(parents=True, exist_ok=True)
    java_tmp = f"-Djava.io.tmpdir={scratch}"

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
        .config("spark.local.dir", str(scratch))
        .config("spark.driver.extraJavaOptions", java_tmp)
        .config("spark.executor.extraJavaOptions", java_tmp)
        .getOrCreate()
    )
