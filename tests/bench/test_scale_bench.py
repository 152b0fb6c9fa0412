"""`python -m bench.scale` runs end to end at small N and writes every figure it promises (no
assertion about speed: the point is that the committed command still works)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_scale_bench_writes_its_figures_and_plot(tmp_path: Path) -> None:
    out, png = tmp_path / "scale.json", tmp_path / "scale.png"
    sizes = ["--topics", "1,20", "--groups", "5,10", "--samples", "20", "--no-rocketmq"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", *sizes, "--json", str(out), "--plot", str(png)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["command"].startswith("python -m bench.scale --topics 1,20")
    ours = result["systems"]["longboat"]
    assert [lv["topics"] for lv in ours["levels"]] == [1, 20]
    for lv in ours["levels"]:
        for key in ("create_ms_per_topic", "route_p50_ms", "send_p50_ms", "pull_p50_ms"):
            assert math.isfinite(lv[key]) and lv[key] > 0, (key, lv)
        assert lv["registration_body_kib"] > 0 and lv["rss_mib"] > 0
    assert [g["groups"] for g in ours["groups"]] == [5, 10]
    restart = ours["restart"]
    assert restart["restart_to_first_send_s"] > 0 and restart["rss_after_restart_mib"] > 0
    assert png.stat().st_size > 0
