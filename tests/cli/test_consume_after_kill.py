"""The user's path through a crash: `longboat consume` reads 5 of 10 messages and says "offsets
committed", `longboat up` is SIGKILLed right after, and once it is up again the same command
prints the other 5: the committed offsets survived the kill, the group resumes where it was and
does not start at the end."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from longboat.client import ClientConfig, Message
from longboat.client.sync import Producer

from .processes import ServerProcess, cli_env
from .test_servers import servers, start, up_args  # noqa: F401 - `servers` is a fixture

TOPIC = "CliKillTopic"


def consume(home: Path, namesrv: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longboat.cli", "consume", "-t", TOPIC, "-g", "cli-kill",
         "--namesrv", namesrv, "--idle-timeout", "20", *args],
        env=cli_env(home), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_offsets_committed_before_a_kill_are_where_the_group_resumes(
    servers: list[ServerProcess],  # noqa: F811
    tmp_path: Path,
) -> None:
    data = tmp_path / "store"
    up = start(servers, tmp_path, *up_args(data), "--dashboard-port", "-1")
    namesrv = up.address_of("name server")
    with Producer("cli-kill", config=ClientConfig([namesrv], client_ip="127.0.0.1")) as producer:
        for i in range(10):
            assert producer.send(Message(TOPIC, f"m{i}".encode())).ok

    first = consume(tmp_path, namesrv, "--from", "earliest", "-n", "5")
    assert "offsets committed" in first.stderr, first.stderr
    up.proc.send_signal(signal.SIGKILL)
    up.kill()

    again = start(servers, tmp_path, *up_args(data), "--dashboard-port", "-1")
    second = consume(tmp_path, again.address_of("name server"), "-n", "5")
    assert "offsets committed" in second.stderr, second.stderr
    printed = first.stdout.split() + second.stdout.split()
    assert sorted(printed) == [f"m{i}" for i in range(10)]
