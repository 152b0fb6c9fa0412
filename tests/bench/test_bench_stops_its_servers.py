"""A peer bench stopped by SIGTERM or Ctrl-C (SIGINT) stops what it started on the way out:
`longboat up` (in a session of its own, so no signal to the bench reaches it) and the Java
load generator; none of its processes outlives it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench.compare_systems import READY_LINE, with_descendants

ROOT = Path(__file__).resolve().parents[2]


def processes_under(pid: int) -> dict[int, bytes]:
    """Every process under `pid` (not itself) with its command line; retried when one exits
    while the tree is walked."""
    while True:
        try:
            return {p: Path(f"/proc/{p}/cmdline").read_bytes() for p in with_descendants([pid])[1:]}
        except OSError:
            continue


def still_running(pid: int, cmdline: bytes) -> bool:
    """The same process (not a pid reused since) and not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" and Path(f"/proc/{pid}/cmdline").read_bytes() == cmdline
    except (OSError, IndexError):
        return False


def serving_up(children: dict[int, bytes]) -> bool:
    """Whether the bench's `longboat up` prints that both its servers listen."""
    for cmdline in children.values():
        args = cmdline.decode().split("\0")
        if "longboat.cli" in args and "up" in args:
            log = Path(args[args.index("--data") + 1]).parent / "longboat.log"
            return log.exists() and READY_LINE in log.read_bytes()
    return False


@pytest.mark.java
@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_bench_leaves_no_process_behind(
    java_peers: None, tmp_path: Path, signum: signal.Signals
) -> None:
    with (tmp_path / "bench.out").open("wb") as out:
        bench = subprocess.Popen(
            [sys.executable, "-m", "bench.rocketmq_compare", "--systems", "longboat",
             "--runs", "1", "--warmup", "0.5", "--duration", "1", "--py-drain", "64",
             "--parked", "10", "--timeout", "60", "--json", str(tmp_path / "compare.json")],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while not serving_up(children := processes_under(bench.pid)):
            assert bench.poll() is None, (tmp_path / "bench.out").read_text()
            assert time.monotonic() < deadline, "the bench's servers did not come up"
            time.sleep(0.1)
        bench.send_signal(signum)
        code = bench.wait(120)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    # Exited on the signal: by SystemExit after a SIGTERM, by KeyboardInterrupt after a SIGINT.
    assert code in (128 + signum, -signum), (tmp_path / "bench.out").read_text()
    survivors = {p: c for p, c in children.items() if still_running(p, c)}
    assert not survivors, survivors
