"""Filter pushdown for batch reads (Spark >= 4.1's `pushFilters`, on when the session sets
`spark.sql.python.filterPushdown.enabled`): the conditions a selective query puts on the
columns the broker can answer become what is read, so the query pulls only what it needs.

* `topic`, `broker` (`=`, `IN`) and `queue_id` (`=`, `IN`, comparisons): fewer queues;
* `queue_offset` (comparisons, `=`): narrower offset ranges;
* `tags` (`=`, `IN`): the pull's tag filter, so the broker skips the rest;
* `store_timestamp` (comparisons): offsets found by time on the broker (Spark re-checks);
* `keys` (`=`): the broker's key index, only the candidates (Spark re-checks).

Store times only grow along a queue, so a time bound is an offset bound; the bounds are
widened by a millisecond and the filters handed back to Spark, which applies them exactly
(Spark's timestamps are finer than the store's milliseconds).  A key lookup finds messages
whose KEYS *contain* the key, and gives up (reads the ranges) when a broker answers
`KEY_LOOKUP_MAX` of them.
Everything else is handed back untouched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

# A broker answering this many candidates for a key may have more (RocketMQ caps a key query
# at 32): then the ranges are read instead.
KEY_LOOKUP_MAX = 32


@dataclass
class Pushed:
    """What the pushed filters allow; None: anything."""

    topics: frozenset[str] | None = None
    brokers: frozenset[str] | None = None
    queue_ids: frozenset[int] | None = None
    queue_id_range: tuple[float, float] = (-math.inf, math.inf)
    offsets: tuple[float, float] = (-math.inf, math.inf)  # [lo, hi)
    tags: frozenset[str] | None = None
    time_ms: tuple[int | None, int | None] = (None, None)  # [lo, hi)
    keys: list[str] = field(default_factory=list)

    def queue_allowed(self, topic: str, broker: str, queue_id: int) -> bool:
        lo, hi = self.queue_id_range
        return (
            (self.topics is None or topic in self.topics)
            and (self.brokers is None or broker in self.brokers)
            and (self.queue_ids is None or queue_id in self.queue_ids)
            and lo <= queue_id < hi
        )


def _values(f: Filter) -> frozenset[Any] | None:
    if isinstance(f, EqualTo):
        return frozenset([f.value])
    if isinstance(f, In):
        return frozenset(f.value)
    return None


def _bound(f: Filter) -> tuple[float, float] | None:
    """[lo, hi) of integers a comparison allows."""
    if isinstance(f, EqualTo) and isinstance(f.value, int):
        return f.value, f.value + 1
    if isinstance(f, GreaterThan):
        return f.value + 1, math.inf
    if isinstance(f, GreaterThanOrEqual):
        return f.value, math.inf
    if isinstance(f, LessThan):
        return -math.inf, f.value
    if isinstance(f, LessThanOrEqual):
        return -math.inf, f.value + 1
    return None


def _intersect(a: frozenset[Any] | None, b: frozenset[Any]) -> frozenset[Any]:
    return b if a is None else a & b


def _ms(value: Any) -> float | None:
    return value.timestamp() * 1000 if isinstance(value, datetime) else None


def push(filters: list[Filter]) -> tuple[Pushed, list[Filter]]:
    """The pushed conditions, and the filters Spark must still apply."""
    pushed = Pushed()
    keep: list[Filter] = []
    for f in filters:
        path: tuple[str, ...] = getattr(f, "attribute", ())
        column = path[0] if len(path) == 1 else None
        values = _values(f)
        if column in ("topic", "broker", "tags") and values is not None:
            if all(isinstance(v, str) for v in values):
                name = {"topic": "topics", "broker": "brokers", "tags": "tags"}[column]
                setattr(pushed, name, _intersect(getattr(pushed, name), values))
                continue
        elif column == "queue_id":
            if values is not None and all(isinstance(v, int) for v in values):
                pushed.queue_ids = _intersect(pushed.queue_ids, values)
                continue
            bound = _bound(f)
            if bound is not None:
                lo, hi = pushed.queue_id_range
                pushed.queue_id_range = (max(lo, bound[0]), min(hi, bound[1]))
                continue
        elif column == "queue_offset" and (bound := _bound(f)) is not None:
            lo, hi = pushed.offsets
            pushed.offsets = (max(lo, bound[0]), min(hi, bound[1]))
            continue
        elif column == "store_timestamp" and (ms := _ms(getattr(f, "value", None))) is not None:
            lo_ms, hi_ms = pushed.time_ms
            if isinstance(f, GreaterThan | GreaterThanOrEqual):
                lo = math.floor(ms) - 1
                pushed.time_ms = (lo if lo_ms is None else max(lo_ms, lo), hi_ms)
            elif isinstance(f, LessThan | LessThanOrEqual):
                hi = math.ceil(ms) + 1
                pushed.time_ms = (lo_ms, hi if hi_ms is None else min(hi_ms, hi))
        elif column == "keys" and isinstance(f, EqualTo) and isinstance(f.value, str):
            pushed.keys.append(f.value)
        keep.append(f)
    return pushed, keep
