"""Benchmark results as data: one JSON file per benchmark under `bench/results/`.

Each run of a benchmark that records its figures replaces its file with what it measured and
where: the commit (with `+dirty` when the tree had changes), the host, its CPU model and count,
the date, the sizes it ran at and every run's raw figures, plus the benchmark's own summary.
The page `bench/README.md` is generated from the latest file of each (`python -m
bench.report`); earlier results are the file's history in git, not prose.

What the page shows comes from each file's `page`, so the report knows no benchmark:
`targets`, a list of {"figure", "target", "value", "met"} (value a ratio or a figure as
printed, met true, false or null), and `tables`, a list of {"title", "columns", "rows"} with
the cells as printed.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from argparse import ArgumentParser
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
# What benchmarks write: a change there leaves a run's commit clean (`commit`).
OUTPUT = ("bench/results", "bench/README.md")
FORMAT = 1


def cpu_model() -> str:
    """The CPU's model name as Linux reports it (`platform.processor()` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def commit() -> str:
    """The checked-out commit, `+dirty` when the work tree differs from it outside the
    benchmarks' own output (`bench/results/`, the generated page), so that benchmarks run one
    after another on one commit are all labelled clean."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    changed = git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", *(f":!{p}" for p in OUTPUT)
    )
    return head + ("+dirty" if changed else "")


def environment() -> dict[str, Any]:
    """Where and when a benchmark ran."""
    return {
        "commit": commit(),
        "host": platform.node(),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def record(
    benchmark: str,
    *,
    sizes: Mapping[str, Any],
    runs: Sequence[Any],
    summary: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    page: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON document of one invocation of `benchmark`."""
    return {
        "format": FORMAT,
        "benchmark": benchmark,
        "environment": environment(),
        "sizes": dict(sizes),
        "settings": dict(settings or {}),
        "runs": list(runs),
        "summary": dict(summary or {}),
        "page": dict(page or {"targets": [], "tables": []}),
    }


def save(result: Mapping[str, Any], path: Path | None = None) -> Path:
    """Write `result` to `path` (default: the benchmark's file in `RESULTS_DIR`)."""
    path = path or RESULTS_DIR / f"{result['benchmark']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return path


def latest(directory: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """Every benchmark's latest result, by benchmark name."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def add_json_option(parser: ArgumentParser, benchmark: str) -> None:
    """`--json PATH`: where the result goes instead of the benchmark's file here (a test's
    directory, say, so a tiny run never replaces a recorded one)."""
    parser.add_argument(
        "--json", type=Path, default=None, help=f"write the result here [results/{benchmark}.json]"
    )


class Page:
    """The tables a benchmark prints, kept as its result's `page` as they are printed: each
    table's header and each row go to stdout as Markdown and into the page, so the printed
    figures and the recorded ones are the same strings."""

    def __init__(self) -> None:
        self.tables: list[dict[str, Any]] = []
        self.targets: list[dict[str, Any]] = []

    def table(self, title: str, columns: Sequence[str], align: Sequence[str] = ()) -> None:
        """Start a table; `align` is each column's Markdown rule (default `---`)."""
        self.tables.append({"title": title, "columns": list(columns), "rows": []})
        rules = list(align) + ["---"] * (len(columns) - len(align))
        print()
        print(title)
        print()
        print(markdown_row(columns))
        print("|" + "|".join(rules) + "|")

    def row(self, *cells: object) -> None:
        text = [str(c) for c in cells]
        self.tables[-1]["rows"].append(text)
        print(markdown_row(text))

    def target(self, figure: str, target: str, value: str, met: bool | None) -> None:
        self.targets.append({"figure": figure, "target": target, "value": value, "met": met})

    def as_dict(self) -> dict[str, Any]:
        return {"targets": self.targets, "tables": self.tables}


def markdown_row(cells: Sequence[str]) -> str:
    """`| a | b |`, an empty cell as `| |`."""
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"
