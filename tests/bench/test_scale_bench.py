"""`python -m bench.scale` runs end to end at small N and records every figure it promises as a
`bench.results` document, its plot beside it (no assertion about speed: the point is that the
committed command still works)."""

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
def test_scale_bench_records_its_figures_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    sizes = ["--topics", "1,20", "--groups", "5,10", "--samples", "20", "--no-rocketmq"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", *sizes, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["benchmark"] == "scale"
    assert result["settings"]["command"].startswith("python -m bench.scale --topics 1,20")
    assert result["environment"]["commit"] and result["environment"]["date"]
    ours = result["runs"][0]["longboat"]
    assert [lv["topics"] for lv in ours["levels"]] == [1, 20]
    for lv in ours["levels"]:
        for key in (
            "create_ms_per_topic",
            "route_p50_ms",
            "send_p50_ms",
            "send_one_topic_p50_ms",
            "pull_p50_ms",
        ):
            assert math.isfinite(lv[key]) and lv[key] > 0, (key, lv)
        assert lv["registration_body_kib"] > 0 and lv["rss_mib"] > 0
    assert [g["groups"] for g in ours["groups"]] == [5, 10]
    restart = ours["restart"]
    assert restart["restart_to_first_send_s"] > 0 and restart["rss_after_restart_mib"] > 0
    # At these sizes only the restart's targets apply, and RocketMQ did not run.
    verdicts = {t["figure"]: t["met"] for t in result["page"]["targets"]}
    assert verdicts.keys() == {"restart to first accepted send", "RSS after the restart"}
    assert verdicts["restart to first accepted send"] is None
    assert [t["title"] for t in result["page"]["tables"]] == [
        "Figures by number of topics",
        "First heartbeats of new groups",
        "Restart",
    ]
    assert out.with_suffix(".png").stat().st_size > 0
