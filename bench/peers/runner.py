"""Run the selected workloads R times per system in one invocation and collect medians.

All servers are started up front and runs are interleaved (run 1 of every system, then run 2,
...) so that slow drift of a shared, noisy machine spreads over every system alike. Servers are
stopped in a finally block whatever happens (and by atexit in ``procs`` as a last resort).
"""

from __future__ import annotations

import contextlib
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil

from bench.peers.base import System
from bench.peers.child import event_loop_name
from bench.peers.install import install_missing
from bench.peers.registry import load_system
from bench.peers.stats import median_figures
from bench.peers.workloads import FRESH_SERVER, WORKLOADS, Sizes


def machine() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": psutil.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "client_event_loop": event_loop_name(),
    }


def run_bench(
    system_names: Sequence[str],
    workload_names: Sequence[str],
    sizes: Sizes,
    runs: int,
    install: bool = False,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Run everything and return the JSON document (per-run figures, medians, metadata)."""
    unknown = [w for w in workload_names if w not in WORKLOADS]
    if unknown:
        raise KeyError(f"unknown workloads {unknown}; known: {', '.join(WORKLOADS)}")
    doc: dict[str, Any] = {
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        "sizes": asdict(sizes),
        "runs": runs,
        "workloads": list(workload_names),
        "systems": {},
        "results": {},
        "medians": {},
        "errors": [],
    }
    systems: dict[str, System] = {}
    for name in system_names:
        try:
            systems[name] = load_system(name)
        except ImportError as exc:
            doc["systems"][name] = {"skipped": str(exc)}
    if install:
        err = install_missing(systems.values())
        if err:
            log(f"--install: {err}")
    for name in list(systems):
        reason = systems[name].missing()
        if reason:
            doc["systems"][name] = {"skipped": reason}
            del systems[name]

    workdir = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    started: dict[str, System] = {}
    try:
        for name, system in systems.items():
            try:
                _start(system, workdir / name, log)
            except Exception as exc:
                doc["systems"][name] = {"skipped": f"failed to start: {exc}"}
                continue
            started[name] = system
            doc["systems"][name] = {"version": system.version(), "settings": system.settings()}
            doc["results"][name] = {w: [] for w in workload_names if _runs(system, w)}
        for run in range(1, runs + 1):
            for name, system in started.items():
                for w in workload_names:
                    if not _runs(system, w):
                        continue
                    log(f"run {run}/{runs} {name} {w} ...")
                    t0 = time.monotonic()
                    try:
                        if w in FRESH_SERVER:
                            _restart(system, workdir / f"{name}-{w}-{run}", log)
                        figures = WORKLOADS[w](system, sizes)
                    except Exception:
                        doc["errors"].append(
                            {
                                "system": name,
                                "workload": w,
                                "run": run,
                                "error": traceback.format_exc(),
                            }
                        )
                        log(f"  failed: {traceback.format_exc(limit=2)}")
                        continue
                    figures["elapsed_s"] = round(time.monotonic() - t0, 2)
                    doc["results"][name][w].append(figures)
                    log(f"  {_brief(figures)}")
    finally:
        for system in started.values():
            system.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    for name, per_workload in doc["results"].items():
        doc["medians"][name] = {
            w: median_figures(runs_) for w, runs_ in per_workload.items() if runs_
        }
    return doc


def _runs(system: System, workload: str) -> bool:
    return system.workloads is None or workload in system.workloads


def _restart(system: System, fresh_dir: Path, log: Callable[[str], None]) -> None:
    """Stop the server and start it again on new ports with an empty data dir."""
    system.stop()
    _start(system, fresh_dir, log)


# A port the kernel handed out as free can be taken by another socket (a client's ephemeral
# port) before the server binds it; a start that lost that race is tried on other ports.
START_ATTEMPTS = 3


def _start(system: System, data_dir: Path, log: Callable[[str], None]) -> None:
    for attempt in range(1, START_ATTEMPTS + 1):
        attempt_dir = data_dir if attempt == 1 else data_dir.with_name(f"{data_dir.name}-{attempt}")
        attempt_dir.mkdir(parents=True)
        try:
            system.start(attempt_dir)
            return
        except Exception as exc:
            if attempt == START_ATTEMPTS or "address already in use" not in str(exc):
                raise
            log(f"  {system.name} lost its port to another socket; starting it on others")
            system.stop()


def _brief(figures: dict[str, Any]) -> str:
    return ", ".join(
        f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
        for k, v in figures.items()
        if not isinstance(v, list)
    )
