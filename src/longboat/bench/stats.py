"""Percentiles and the figures a benchmark reports: TPS and latency p50/p99/p999/max.

Nearest-rank percentiles (no interpolation): every figure is a latency that was measured, so
a p999 over 800 samples is the slowest one, not a number between two.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted sequence."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(round(q * len(sorted_values) / 100.0, 9)))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def latency_figures(latencies_us: Iterable[float]) -> dict[str, float]:
    """p50/p99/p999/max in microseconds; empty when nothing was measured."""
    values = sorted(latencies_us)
    if not values:
        return {}
    return {
        "p50_us": percentile(values, 50),
        "p99_us": percentile(values, 99),
        "p999_us": percentile(values, 99.9),
        "max_us": values[-1],
    }


@dataclass
class BenchResult:
    """One benchmark case: how many messages moved in how long, and per-operation latencies
    (what one operation is — a send, a batch send, a delivery — is said by `latency_of`)."""

    case: str
    messages: int = 0
    seconds: float = 0.0
    latency_of: str = ""
    latencies_us: list[float] = field(default_factory=list)
    extra: dict[str, float | int | str] = field(default_factory=dict)

    @property
    def tps(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def figures(self) -> dict[str, float | int | str]:
        """Everything a report prints or `--json` writes (latencies summarised, not listed)."""
        out: dict[str, float | int | str] = {
            "case": self.case,
            "messages": self.messages,
            "seconds": round(self.seconds, 6),
            "tps": round(self.tps, 1),
        }
        if self.latencies_us:
            out["latency_of"] = self.latency_of
            out["samples"] = len(self.latencies_us)
            out.update(latency_figures(self.latencies_us))
        out.update(self.extra)
        return out
