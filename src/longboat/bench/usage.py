"""CPU time and resident memory of a process, sampled from the kernel's counters (psutil), for
idle-cost figures: parked pulls, held connections."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Sample:
    """CPU seconds (user + system, all threads) and resident set size of one process."""

    cpu_s: float
    rss: int
    at: float


def sample(pid: int) -> Sample:
    proc = psutil.Process(pid)
    with proc.oneshot():
        t = proc.cpu_times()
        return Sample(cpu_s=t.user + t.system, rss=proc.memory_info().rss, at=time.monotonic())


def cpu_pct(first: Sample, last: Sample) -> float:
    """Percent of one core the process used between two samples."""
    return 100 * (last.cpu_s - first.cpu_s) / max(last.at - first.at, 1e-9)
