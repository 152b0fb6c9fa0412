"""PySpark connector: `spark.read/readStream/write/writeStream.format("longboat")`.

Pure Python (pyspark's Python Data Source API, no JVM jar).  Installing the package registers
the format automatically (the top-level `pyspark_longboat` module); `register(spark)` does it
explicitly for one session.  Options, schema and guarantees: docs/spark.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.spark.options import OptionError
from longboat.spark.source import DataLossError, LongboatDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DataLossError", "LongboatDataSource", "OptionError", "register"]


def register(spark: SparkSession) -> None:
    """Make `format("longboat")` available in `spark` (idempotent)."""
    spark.dataSource.register(LongboatDataSource)
