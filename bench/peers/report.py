"""The medians table (rich when installed, plain text otherwise) and the page of a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.peers.stats import HIGHER_IS_BETTER

_FANOUT = (
    "group_median_msgs_per_s",
    "aggregate_msgs_per_s",
    "server_cpu_us_per_msg",
    "client_cpu_us_per_msg",
)

#: Figures shown in the table, per workload, in order.
SHOWN: dict[str, tuple[str, ...]] = {
    "wakeup": ("p50_us", "p99_us", "p999_us", "max_us"),
    "produce_single": ("msgs_per_s", "server_cpu_us_per_msg", "client_cpu_us_per_msg"),
    "produce_batch": ("msgs_per_s", "server_cpu_us_per_msg", "client_cpu_us_per_msg"),
    "consume_fanout": _FANOUT,
    "consume_fanout_1000": _FANOUT,
    "parked": ("cpu_pct", "rss_bytes_per_poll"),
}


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _label(fig: str) -> str:
    """A figure's name with the direction that is better."""
    return f"{fig} ({'higher' if HIGHER_IS_BETTER.get(fig) else 'lower'} better)"


def _measured(doc: Mapping[str, Any]) -> list[str]:
    """The systems of a document that were not skipped."""
    return [s for s, info in doc["systems"].items() if not info.get("skipped")]


def table_rows(
    medians: Mapping[str, Mapping[str, Mapping[str, float]]], systems: Sequence[str]
) -> list[list[str]]:
    rows = []
    workloads = [w for w in SHOWN if any(w in medians.get(s, {}) for s in systems)]
    for w in workloads:
        for fig in SHOWN[w]:
            cells = [_fmt(medians.get(s, {}).get(w, {}).get(fig)) for s in systems]
            rows.append([w, _label(fig), *cells])
    return rows


def print_report(doc: Mapping[str, Any]) -> None:
    systems = _measured(doc)
    rows = table_rows(doc["medians"], systems)
    header = ["workload", "figure", *systems]
    title = f"medians of {doc['runs']} runs"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        _print_plain(title, header, rows)
    else:
        table = Table(title=title)
        for i, h in enumerate(header):
            table.add_column(h, justify="right" if i >= 2 else "left")
        for row in rows:
            table.add_row(*row)
        Console().print(table)
    for name, info in doc["systems"].items():
        if info.get("skipped"):
            print(f"{name}: skipped ({info['skipped']})")
            continue
        print(f"{name}: {info['version']}")
        for k, v in info["settings"].items():
            print(f"    {k}: {v}")
    for err in doc["errors"]:
        print(f"error: {err['system']} {err['workload']} run {err['run']}: {err['error'][-300:]}")


def _print_plain(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(title)
    for r in [header, *rows]:
        print(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )


def page(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What `bench.report` shows of a run (`bench.results`): the medians table, no targets."""
    systems = _measured(doc)
    return {
        "targets": [],
        "tables": [
            {
                "title": f"medians of {doc['runs']} runs",
                "columns": ["workload", "figure", *systems],
                "rows": table_rows(doc["medians"], systems),
            }
        ],
    }


def plot_report(doc: Mapping[str, Any], path: Path) -> Path:
    """The medians of every shown figure as grouped bars, one group per figure (each group
    scaled to its highest value; the labels are the raw medians)."""
    from longboat.bench.plot import plot_side_by_side

    systems = _measured(doc)
    medians = doc["medians"]
    figures: dict[str, dict[str, float]] = {}
    for workload, shown in SHOWN.items():
        for fig in shown:
            row = {
                s: medians[s][workload][fig]
                for s in systems
                if fig in medians.get(s, {}).get(workload, {})
            }
            if row:
                figures[f"{workload} {_label(fig)}"] = row
    return plot_side_by_side(figures, path, title=f"medians of {doc['runs']} runs")
