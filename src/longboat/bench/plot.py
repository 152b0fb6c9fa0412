"""PNG plots of benchmark figures (matplotlib, Agg backend: no display needed).

Latency is drawn as a percentile spectrum — latency against 1 - q on a log axis — so p50,
p99 and p999 sit at evenly spaced points and a tail is visible instead of squashed into the
last pixel of a histogram.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from longboat.bench.stats import BenchResult, percentile

# Where the spectrum is sampled: 0 .. 99.99 %, denser towards the tail.
_QUANTILES = sorted({*range(0, 90, 5), *(90 + i / 2 for i in range(19)), 99.5, 99.9, 99.95, 99.99})


def pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_latencies(results: Sequence[BenchResult], path: Path | str) -> Path:
    """One curve per result that measured latencies; returns the path written."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    for result in results:
        values = sorted(result.latencies_us)
        if not values:
            continue
        xs = [1 - q / 100 for q in _QUANTILES]
        ys = [percentile(values, q) if q > 0 else values[0] for q in _QUANTILES]
        ax.plot(xs, ys, marker=".", label=f"{result.case}: {result.latency_of}")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_yscale("log")
    ticks = [1.0, 0.5, 0.1, 0.01, 0.001, 0.0001]
    ax.set_xticks(ticks, ["min", "p50", "p90", "p99", "p99.9", "p99.99"])
    ax.set_ylabel("latency (µs)")
    ax.set_title("Latency by percentile")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def plot_side_by_side(
    figures: Mapping[str, Mapping[str, float]], path: Path | str, *, title: str
) -> Path:
    """Grouped bars: `figures[figure][system] = value`, each figure normalised to its best
    system (1.0) so throughputs and latencies share one axis; the bar label is the raw value."""
    plt = pyplot()
    names = list(figures)
    systems = sorted({s for row in figures.values() for s in row})
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(names)), 4.8), dpi=110)
    width = 0.8 / max(len(systems), 1)
    for i, system in enumerate(systems):
        xs, heights, labels = [], [], []
        for j, name in enumerate(names):
            row = figures[name]
            if system not in row or not row[system]:
                continue
            top = max(v for v in row.values() if v)
            xs.append(j + (i - (len(systems) - 1) / 2) * width)
            heights.append(row[system] / top)
            labels.append(f"{row[system]:,.0f}" if row[system] >= 10 else f"{row[system]:.2f}")
        bars = ax.bar(xs, heights, width, label=system)
        ax.bar_label(bars, labels, fontsize=6, rotation=90, padding=2)
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("relative to the highest value")
    ax.set_ylim(0, 1.35)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path | str) -> Path:
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
