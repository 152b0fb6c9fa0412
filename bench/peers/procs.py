"""Child server processes: free ports, start/wait/stop, and CPU/RSS sampling.

Servers are run directly as children of the runner (never through a system service manager),
die with it (PR_SET_PDEATHSIG on Linux, plus atexit), and listen on 127.0.0.1 only.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from longboat.bench.usage import Sample, sample

__all__ = ["HOST", "Sample", "ServerProcess", "command_output", "free_port", "sample"]

HOST = "127.0.0.1"

_live: set[ServerProcess] = set()


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM the child if the runner dies without running its finally blocks."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class ServerProcess:
    """One server binary running as our child, with its output in a log file."""

    def __init__(
        self,
        argv: Sequence[str],
        log_path: Path,
        port: int,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.env = {**os.environ, **env} if env else None
        self.log_path = log_path
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout_s: float = 15.0) -> None:
        """Start and wait until the port accepts connections; raise with the log tail if not."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                preexec_fn=_die_with_parent if os.name == "posix" else None,
            )
        _live.add(self)
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.argv[0]} exited with {self.proc.returncode}: {self.log_tail()}"
                )
            with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), 0.2):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(
            f"{self.argv[0]} did not listen on {HOST}:{self.port}: {self.log_tail()}"
        )

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, wait, then SIGKILL; idempotent."""
        proc, self.proc = self.proc, None
        _live.discard(self)
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("server not running")
        return self.proc.pid

    def log_tail(self, chars: int = 800) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


@atexit.register
def _stop_all() -> None:
    for server in list(_live):
        server.stop(grace_s=5.0)


def command_output(argv: Sequence[str], timeout_s: float = 10.0) -> str:
    """First line of a command's output (for ``--version``), or the error as text."""
    try:
        out = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else "unknown"
