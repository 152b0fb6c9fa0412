"""`python -m bench.scale` runs end to end at small N and records every figure it promises as a
`bench.results` document, its plot beside it (no assertion about speed: the point is that the
committed command still works); its targets are judged against each RocketMQ release."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import results, scale

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
    # At these sizes only the restart's targets apply, and no RocketMQ release was asked for.
    assert result["settings"]["rocketmq_releases"] == []
    verdicts = {t["figure"]: t["met"] for t in result["page"]["targets"]}
    assert verdicts.keys() == {"RSS after the restart"}
    assert [t["title"] for t in result["page"]["tables"]] == [
        "Figures by number of topics",
        "First heartbeats of new groups",
        "Restart",
    ]
    assert out.with_suffix(".png").stat().st_size > 0


def figures(create_ms: float, send_ms: float, heartbeat_ms: float, restart_s: float) -> Any:
    """One system's figures at 1 and 10,000 topics and 1,000 groups, as `bench.scale` records
    them (only what the targets read)."""
    levels = [
        {"topics": n, "create_ms_per_topic": create_ms, "send_p50_ms": send_ms} for n in (1, 10_000)
    ]
    return {
        "levels": levels,
        "groups": [{"groups": 1_000, "first_heartbeat_p50_ms": heartbeat_ms}],
        "restart": {
            "restart_to_first_send_s": restart_s,
            "rss_before_restart_mib": 100.0,
            "rss_after_restart_mib": 110.0,
        },
    }


def test_scale_targets_are_judged_against_each_rocketmq_release() -> None:
    """Each target against RocketMQ has a row per release, with that release's ratio and
    verdict; a release asked for but not run has its rows, not measured; Longboat's own targets
    appear once."""
    systems = {
        "longboat": figures(create_ms=1.0, send_ms=0.5, heartbeat_ms=0.4, restart_s=1.0),
        "rocketmq-4.9.7": figures(create_ms=2.0, send_ms=0.4, heartbeat_ms=0.8, restart_s=4.0),
        "rocketmq-5.3.3": figures(create_ms=0.5, send_ms=1.0, heartbeat_ms=0.8, restart_s=8.0),
    }
    page = results.Page()
    scale.targets(page, systems, ["rocketmq-4.9.7", "rocketmq-5.3.3", "rocketmq-9.9.9"])
    rows = {(t["figure"], t["target"]): (t["value"], t["met"]) for t in page.targets}
    create, send = "create time per topic at 10,000 topics", "send p50 at 10,000 topics"
    heartbeat = "first heartbeat of a new group at 1,000 groups"
    restart = "restart to first accepted send"
    assert rows[(create, "<= 1.0x RocketMQ 4.9.7's")] == ("0.50x", True)
    assert rows[(create, "<= 1.0x RocketMQ 5.3.3's")] == ("2.00x", False)
    assert rows[(send, "<= 1.0x RocketMQ 4.9.7's")] == ("1.25x", False)
    assert rows[(send, "<= 1.0x RocketMQ 5.3.3's")] == ("0.50x", True)
    assert rows[(heartbeat, "<= 1.0x RocketMQ 5.3.3's")] == ("0.50x", True)
    assert rows[(restart, "<= 1.0x RocketMQ 4.9.7's")] == ("0.25x", True)
    assert rows[(restart, "<= 1.0x RocketMQ 5.3.3's")] == ("0.12x", True)
    for figure in (create, send, heartbeat, restart):
        assert rows[(figure, "<= 1.0x RocketMQ 9.9.9's")] == ("not measured", None)
    assert rows[(create, "<= 1.5x Longboat's at 1 topic")] == ("1.00x", True)
    assert rows[("RSS after the restart", "<= 1.2x before it")] == ("1.10x", True)
    assert len(page.targets) == 3 * 4 + 3


def test_scale_takes_the_rocketmq_releases_to_run() -> None:
    """`--rocketmq` names the releases (each its own system, `rocketmq-VERSION`), by default
    every one available here; `--no-rocketmq` none; an unknown release is refused."""
    from bench.compare_systems import available

    default = scale.parse([]).rocketmq
    assert [scale.release_name(v) for v in default] == available()[1:]
    assert scale.parse(["--rocketmq", "5.3.3"]).rocketmq == ["5.3.3"]
    assert scale.parse(["--rocketmq", "4.9.7,5.3.3"]).rocketmq == ["4.9.7", "5.3.3"]
    assert scale.parse(["--no-rocketmq"]).rocketmq == []
    with pytest.raises(SystemExit):
        scale.parse(["--rocketmq", "4.2.0"])
