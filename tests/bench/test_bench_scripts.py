"""The benchmark scripts quoted in bench/README.md run and print their figures (tiny sizes; no
assertion about speed: the point is that the committed commands still work)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@pytest.mark.timeout(300)
def test_send_profile_prints_cpu_and_calls_per_send() -> None:
    out = _run("bench.send_profile", "--sends", "200", "--runs", "2", "--top", "5")
    assert re.search(r"broker CPU per send: [\d.]+ us user \+ [\d.]+ us system", out)
    assert re.search(r"Python floor CPU per request: [\d.]+ us user \+ [\d.]+ us system", out)
    assert re.search(r"broker / floor, CPU per request \(runs' median\): [\d.]+x", out)
    assert re.search(r"under cProfile: \d+ Python calls per send", out)


@pytest.mark.timeout(300)
def test_spark_bench_reader_only_reads_every_row() -> None:
    out = _run("bench.spark_bench", "--rows", "3000", "--runs", "1", "--reader-only")
    assert re.search(r"read_range 1: [\d,]+ rows/s, [\d.]+ us CPU/row", out)
    assert re.search(r"decode alone 1: [\d.]+ us CPU/row", out)
