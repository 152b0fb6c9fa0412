"""No RocketMQ JVM outlives the process that started it, however that process dies.

A stand-in for the test session (a Python process) starts Apache RocketMQ's name server the
way the session fixtures do (`peers.rocketmq.spawn_server`, under `peers.lifeline`); the test
then SIGKILLs it, or the guard between it and the JVM, and waits for the JVM to be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.java

TESTS_DIR = Path(__file__).resolve().parent.parent
SESSION = """
import sys, time
from pathlib import Path
from peers.rocketmq import SERVER_DIR, start_namesrv
process, addr = start_namesrv(Path(sys.argv[1]), SERVER_DIR)
print(process.proc.pid, flush=True)
time.sleep(600)
"""


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as dead: it holds no port, no memory)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("killed", ["session", "guard"])
def test_the_jvm_dies_when_its_starter_is_killed(
    java_peers: None, tmp_path: Path, killed: str
) -> None:
    session = subprocess.Popen(
        [sys.executable, "-c", SESSION, str(tmp_path / "home")],
        cwd=TESTS_DIR,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), *sys.path])},
    )
    try:
        assert session.stdout is not None
        guard = int(session.stdout.readline())  # printed once the name server serves
        (jvm,) = children(guard)
        assert "NamesrvStartup" in Path(f"/proc/{jvm}/cmdline").read_text()
        assert alive(jvm)
        os.kill(session.pid if killed == "session" else guard, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while alive(jvm) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(jvm), f"the name server's JVM outlived its {killed}"
    finally:
        session.kill()
        session.wait()
        if session.stdout is not None:
            session.stdout.close()
