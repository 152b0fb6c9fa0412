"""`bench.write_profile` records the server with py-spy under the Java load and groups the
samples by stage of the write path (tiny windows; the point is the harness, not the speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench.write_profile import STAGE_NAMES, STAGES, stage_of

ROOT = Path(__file__).resolve().parents[2]


def test_a_sample_counts_for_the_innermost_frame_a_stage_claims() -> None:
    answer = [
        "Runner.run (asyncio/runners.py)",
        "Router.handle (longboat/remoting/router.py)",
        "SendProcessor._stored (longboat/broker/handlers/send.py)",
        "Header.to_ext (longboat/protocol/header_fields.py)",
        "decode (<string>)",
    ]
    assert stage_of(answer) == "answer encode"
    decode = [
        *answer[:2],
        "SendProcessor.handle (longboat/broker/handlers/send.py)",
        "Header.from_ext (longboat/protocol/header_fields.py)",
        "decode (<string>)",
    ]
    assert stage_of(decode) == "remoting frames/header decode"
    assert stage_of(["<module> (app.py)", "main (app.py)"]) == "other"
    assert {name for name, _, _ in STAGES} | {"other"} == set(STAGE_NAMES)


@pytest.mark.java
@pytest.mark.timeout(300)
def test_write_profile_records_stages_and_functions_of_both_phases(
    java_peers: None, tmp_path: Path
) -> None:
    recorded = tmp_path / "write_profile.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.write_profile", "--warmup", "0.5", "--duration", "2",
         "--top", "3", "--timeout", "120", "--json", str(recorded)],
        cwd=ROOT, capture_output=True, text=True, timeout=280, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(recorded.read_text())
    assert [r["phase"] for r in result["runs"]] == ["batch", "writers"]
    for run in result["runs"]:
        assert run["samples"] > 0
        assert list(run["stages"]) == list(STAGE_NAMES)
        assert sum(run["stages"].values()) == pytest.approx(1.0)
        assert 0 < len(run["functions"]) <= 3
    stages, *functions = result["page"]["tables"]
    assert [row[0] for row in stages["rows"]] == list(STAGE_NAMES)
    assert len(functions) == 2 and all(table["rows"] for table in functions)
    assert "Top functions by own samples, batched produce" in done.stdout
