"""The side-by-side harness (bench/rocketmq_compare.py) runs end to end at tiny durations.

It starts Apache RocketMQ and Longboat itself and drives both with the Java `Bench` peer; this
checks the harness and the JSON it writes (every row measured for every system, figures in
their plausible ranges, a ratio and a verdict per row and peer), not the speed.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import compare_systems, rocketmq_compare  # noqa: E402

ENVIRONMENT = {"commit", "host", "cpu_model", "cpus", "python", "date"}


def test_each_rocketmq_release_is_a_plug_listed_when_its_launcher_is_there() -> None:
    assert list(compare_systems.SYSTEMS) == ["longboat", "rocketmq-4.9.7", "rocketmq-5.3.3"]
    here = compare_systems.available()
    assert here[:2] == ["longboat", "rocketmq-4.9.7"]
    has_5 = importlib.util.find_spec("peers.rocketmq5") is not None
    assert ("rocketmq-5.3.3" in here) == has_5
    assert rocketmq_compare.parse([]).systems == here
    with pytest.raises(SystemExit):
        rocketmq_compare.parse(["--systems", "rocketmq-4.9.7"])  # Longboat is the reference


@pytest.mark.java
@pytest.mark.timeout(900)
def test_harness_writes_every_row_for_every_system(java_peers: None, tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    systems = ["longboat", "rocketmq-4.9.7"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.rocketmq_compare", "--runs", "1", "--warmup", "0.5",
         "--duration", "2", "--systems", ",".join(systems), "--py-drain", "640",
         "--parked", "200", "--timeout", "240", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=840, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())

    assert result["benchmark"] == "rocketmq_compare" and result["format"] == 1
    assert set(result["environment"]) == ENVIRONMENT
    assert result["sizes"]["warmup_s"] == 0.5 and result["sizes"]["duration_s"] == 2
    assert "ASYNC_FLUSH" in result["settings"]["rocketmq-4.9.7"]
    assert "-Xmx512m" in result["settings"]["rocketmq-4.9.7"]
    (run,) = result["runs"]
    assert set(run) == set(systems)
    keys = {key for key, *_ in rocketmq_compare.ROWS}
    for system in systems:
        figures = run[system]
        assert set(figures) == keys
        # A derived CPU figure is None when its window counted no message; an idle broker's
        # CPU may round to 0; nothing is negative but RSS growth (a JVM's may shrink a little).
        measured = {k: v for k, v in figures.items() if v is not None}
        assert set(figures) - set(measured) <= {"cpu_drain", "cpu_fanout", "client_cpu_fanout"}
        assert all(math.isfinite(v) for v in measured.values()), figures
        assert all(v >= 0 for k, v in measured.items() if k != "parked_rss"), figures
        for key in ("single", "batch", "writers", "syncflush", "drain", "fanout"):
            assert figures[key] > 0, (system, key)
        assert figures["wakeup_p50"] <= figures["wakeup_p99"] <= figures["wakeup_p999"]
        assert 1 < figures["idle_rss"] < 4096  # MiB
        assert figures["cold_start"] < 120_000  # ms
    for key, _label, _unit, target in rocketmq_compare.ROWS:
        row = result["summary"][key]
        against = row["against"]["rocketmq-4.9.7"]
        ours, theirs = run["longboat"][key], run["rocketmq-4.9.7"][key]
        if ours is None or theirs is None or key in rocketmq_compare.NO_RATIO:
            assert against["ratio"] is None and against["met"] is None
            continue
        assert against["ratio"] == pytest.approx(ours / max(theirs, rocketmq_compare.ONE_TICK_PCT))
        assert (against["met"] is None) == (target is None)
