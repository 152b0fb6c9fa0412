"""Kafka's "offsets behind latest" figures, from what a query's progress already carries.

Spark's Kafka source reports `minOffsetsBehindLatest`, `maxOffsetsBehindLatest` and
`avgOffsetsBehindLatest` in each micro-batch's `StreamingQueryProgress` through a JVM-only
interface (ReportsSourceMetrics); a Python data source has no such hook (pyspark 4.2's
`DataSourceStreamReader` has none).  Ours reports its high-water marks instead
(`reportLatestOffset`), so each progress entry's source has `endOffset` and `latestOffset`
per queue, and the figures follow from them: `offsets_behind_latest(progress)`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from longboat.spark.offsets import from_offsets


def _positions(value: Any) -> dict[Any, int]:
    if value is None:
        return {}
    return from_offsets(json.loads(value) if isinstance(value, str) else value)


def offsets_behind_latest(source: Mapping[str, Any]) -> dict[str, float]:
    """From one source entry of a `StreamingQueryProgress` (`progress["sources"][0]`, or
    `query.lastProgress["sources"][0]`): per queue, the high-water mark minus where the
    micro-batch ended; their min, max and average over the queues, Kafka's names."""
    end = _positions(source.get("endOffset"))
    latest = _positions(source.get("latestOffset"))
    behind = [max(0, latest[mq] - end.get(mq, 0)) for mq in latest]
    if not behind:
        return {}
    return {
        "minOffsetsBehindLatest": float(min(behind)),
        "maxOffsetsBehindLatest": float(max(behind)),
        "avgOffsetsBehindLatest": sum(behind) / len(behind),
    }
