"""The codec benchmark stays runnable: one tiny run, every row printed and recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_codec_benchmark_runs_and_prints_its_table(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.protocol_codec",
            "--runs",
            "1",
            "--seconds",
            "0.001",
            "--json",
            str(tmp_path / "codec.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "| send request decode (JSON) |" in out
    assert "| record decode |" in out
    assert "| record encode (a batch as the store appends it) |" in out
    assert "| pull answer of 1,024 records in 64 KiB reads, frame decode |" in out
    assert "msgs/s" in out and "frames/s" in out
    result = json.loads((tmp_path / "codec.json").read_text())
    assert len(result["runs"]) == len(result["page"]["tables"][0]["rows"]) > 0
