"""Medians over runs and the candidate-to-peer ratio for the README table (percentiles live
in `longboat.bench.stats`, shared with `longboat bench`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from longboat.bench.stats import latency_figures, percentile

#: Which way is better for each figure; figures not listed (counts, sizes) are context only.
HIGHER_IS_BETTER: dict[str, bool] = {
    "p50_us": False,
    "p99_us": False,
    "p999_us": False,
    "max_us": False,
    "msgs_per_s": True,
    "server_cpu_us_per_msg": False,
    "client_cpu_us_per_msg": False,
    "group_median_msgs_per_s": True,
    "aggregate_msgs_per_s": True,
    "cpu_pct": False,
    "rss_bytes_per_poll": False,
}

__all__ = ["HIGHER_IS_BETTER", "latency_figures", "median_figures", "percentile", "ratios"]

Medians = Mapping[str, Mapping[str, Mapping[str, float]]]  # system -> workload -> figure -> value


def median_figures(runs: Sequence[Mapping[str, object]]) -> dict[str, float]:
    """Median of every numeric figure over the runs that produced it (lists are skipped)."""
    keys: list[str] = []
    for run in runs:
        keys.extend(k for k, v in run.items() if _numeric(v) and k not in keys)
    return {
        k: float(statistics.median(float(r[k]) for r in runs if _numeric(r.get(k))))  # type: ignore[arg-type]
        for k in keys
    }


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def ratios(medians: Medians, candidate: str) -> dict[str, dict[str, dict[str, dict[str, object]]]]:
    """Candidate's median divided by each peer's median, per workload and directional figure.

    Returns ``{peer: {workload: {figure: {"ratio": c/p, "better": bool, "factor": f}}}}`` where
    ``factor`` is how many times better (>1) or worse (<1) the candidate is, whichever direction
    the figure counts in, so a README can say "2.1x the throughput" or "0.4x the latency".
    """
    if candidate not in medians:
        raise KeyError(f"no medians for {candidate!r}")
    out: dict[str, dict[str, dict[str, dict[str, object]]]] = {}
    for peer, peer_workloads in medians.items():
        if peer == candidate:
            continue
        for workload, peer_figs in peer_workloads.items():
            cand_figs = medians[candidate].get(workload, {})
            for fig, higher in HIGHER_IS_BETTER.items():
                c, p = cand_figs.get(fig), peer_figs.get(fig)
                if c is None or p is None or p == 0 or c == 0:
                    continue
                ratio = c / p
                factor = ratio if higher else 1.0 / ratio
                out.setdefault(peer, {}).setdefault(workload, {})[fig] = {
                    "ratio": ratio,
                    "factor": factor,
                    "better": factor > 1.0,
                }
    return out
