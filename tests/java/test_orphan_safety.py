"""No JVM the suite starts outlives the process that started it, however that process dies.

A stand-in for the test session (a Python process) starts a JVM the way the session fixtures
and tests do: Apache RocketMQ 4.9.7's name server and RocketMQ 5.3.3's name server and proxy
(with its broker) by `peers.rocketmq.spawn_server`, a Java peer program by
`peers.process.run_peer`, all under `peers.lifeline`. The test then SIGKILLs the stand-in (or
the guard between it and the JVM) and waits for every JVM to be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from peers.proc_tree import alive, children, command_line, jvms_under
from peers.rocketmq import PEER_PACKAGE

pytestmark = pytest.mark.java

TESTS_DIR = Path(__file__).resolve().parent.parent
NAMESRV_SESSION = """
import sys, time
from pathlib import Path
from peers.rocketmq import SERVER_DIR, start_namesrv
process, addr = start_namesrv(Path(sys.argv[1]), SERVER_DIR)
print(process.proc.pid, flush=True)
time.sleep(600)
"""
ROCKETMQ5_SESSION = """
import sys, time
from pathlib import Path
from peers.rocketmq5 import start_rocketmq5
cluster = start_rocketmq5(Path(sys.argv[1]))
print("up", flush=True)
time.sleep(600)
"""
# A consumer of a name server nobody serves: it runs until its own timeout, ten minutes on.
PEER_SESSION = """
from peers.rocketmq import free_port, run_java_peer
namesrv = f"127.0.0.1:{free_port()}"
run_java_peer("PushConsume", timeout=600, namesrv=namesrv, topic="T", group="G", timeout_ms=600_000)
"""


@contextmanager
def stand_in(code: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A Python process running `code` as the test session would, killed on the way out."""
    session = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=TESTS_DIR,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), *sys.path])},
    )
    try:
        yield session
    finally:
        session.kill()
        session.wait()
        if session.stdout is not None:
            session.stdout.close()


def assert_all_die(jvms: list[int], victim: int, what: str) -> None:
    """SIGKILL `victim` and wait for every one of `jvms` (seen alive first) to be gone."""
    assert jvms and all(alive(jvm) for jvm in jvms)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(alive(jvm) for jvm in jvms) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [command_line(jvm)[:200] for jvm in jvms if alive(jvm)]
    assert not survivors, f"JVMs outlived their {what}: {survivors}"


@pytest.mark.parametrize("killed", ["session", "guard"])
def test_the_jvm_dies_when_its_starter_is_killed(
    java_peers: None, tmp_path: Path, killed: str
) -> None:
    with stand_in(NAMESRV_SESSION, str(tmp_path / "home")) as session:
        assert session.stdout is not None
        guard = int(session.stdout.readline())  # printed once the name server serves
        (jvm,) = children(guard)
        assert "NamesrvStartup" in command_line(jvm)
        assert_all_die([jvm], session.pid if killed == "session" else guard, killed)


def test_the_rocketmq5_jvms_die_when_their_session_is_killed(
    java_peers: None, tmp_path: Path
) -> None:
    """5.3.3's two JVMs: the name server, and the proxy hosting the broker (one start, ~20 s,
    so only the session is killed here; the guard's own death is the case above)."""
    with stand_in(ROCKETMQ5_SESSION, str(tmp_path / "home")) as session:
        assert session.stdout is not None
        assert session.stdout.readline() == "up\n"  # once both serve
        jvms = jvms_under(session.pid)
        started = " ".join(command_line(jvm) for jvm in jvms)
        assert len(jvms) == 2 and "NamesrvStartup" in started and "ProxyStartup" in started
        assert_all_die(jvms, session.pid, "session")


def test_a_java_peer_dies_when_the_session_is_killed(java_peers: None) -> None:
    """A peer program run to completion (`run_peer`: the Java and Node peers, `mqadmin` 5.3.3,
    the 5.3.3 pop consumer) while the session waits on it."""
    with stand_in(PEER_SESSION) as session:
        deadline = time.monotonic() + 60
        jvms: list[int] = []
        while not jvms and time.monotonic() < deadline:
            jvms = jvms_under(session.pid, f"{PEER_PACKAGE}.PushConsume")
            time.sleep(0.1)
        assert_all_die(jvms, session.pid, "session")
