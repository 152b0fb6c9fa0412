"""`python -m bench.soak`, one minute of it (`make test`; the docs' figures come from longer
runs): mixed sends (timers included), four consumer groups (push, lite pull, pop over
remoting, SimpleConsumer over gRPC), the broker and the consumers SIGKILLed and restarted, the
producers replaced — and not one acknowledged message lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(480)
def test_a_one_minute_soak_loses_no_acknowledged_message(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", "--minutes", "1", "--json", str(out),
         "--broker-kill-every", "20", "--consumer-kill-every", "12", "--drain-seconds", "180"],
        cwd=ROOT, capture_output=True, text=True, timeout=420, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())["runs"][0]
    assert report["broker_kills"] >= 2 and report["consumer_kills"] >= 2
    assert set(report["sent_by_mode"]) == {
        "sync", "async", "batch", "oneway", "delayed", "timer", "transaction"
    }  # fmt: skip
    assert report["acknowledged"] > 1000
    assert report["lost"] == 0, report["groups"]
    assert set(report["groups"]) == {"push", "lite", "pop", "grpc"}
    assert all(g["received"] >= report["acknowledged"] for g in report["groups"].values())
    assert report["intervals"] and out.with_suffix(".png").stat().st_size > 0
