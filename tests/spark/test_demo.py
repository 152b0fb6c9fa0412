"""The order pipeline of `longboat.demo` end to end, small, on the test session's Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from longboat.cli.demo import run_demo
from spark.conftest import SparkCluster

pytestmark = pytest.mark.spark


def test_demo_pipeline_end_to_end(spark, spark_cluster: SparkCluster, tmp_path: Path) -> None:
    result = run_demo(spark, spark_cluster.namesrv, tmp_path, orders=400, max_per_trigger=150)
    assert result.alerts == result.large_orders > 0  # exactly once through the sink
    assert result.range_orders == result.range_expected  # the batch job's store-time range
    assert result.revenue_rows > 0 and 0 < result.revenue_orders <= result.orders
