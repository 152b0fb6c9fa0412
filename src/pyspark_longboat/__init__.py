"""Spark imports every top-level `pyspark_*` module it finds and registers its `DefaultSource`:
installing Longboat is enough for `format("longboat")` in every session."""

from __future__ import annotations

from longboat.spark.source import LongboatDataSource as DefaultSource

__all__ = ["DefaultSource"]
