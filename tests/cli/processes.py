"""A `longboat` server command run as a real child process, for the CLI's end-to-end tests.

Output is read on a thread so the test can wait for "listening" without blocking on a pipe;
addresses are taken from what the command printed (it was given port 0 and picked its own).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

READY_LINE = "Ctrl-C stops"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0


def cli_env(home: Path) -> dict[str, str]:
    """The child's environment: a private LONGBOAT_HOME, wide plain rich output, and 16 MiB
    commit-log segments (the 1 GiB default is preallocated: a suite of servers fills a disk)."""
    env = dict(os.environ)
    env.update({"LONGBOAT_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})
    env["LONGBOAT_MAPPED_FILE_SIZE_COMMIT_LOG"] = str(16 * 1024 * 1024)
    env.pop("LONGBOAT_NAMESRV", None)
    return env


class ServerProcess:
    def __init__(
        self,
        args: Sequence[str],
        home: Path,
        *,
        extra_env: dict[str, str] | None = None,
        unset_env: Sequence[str] = (),
    ) -> None:
        self.args = [sys.executable, "-m", "longboat.cli", *args]
        self.proc = subprocess.Popen(
            self.args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={
                k: v for k, v in (cli_env(home) | (extra_env or {})).items() if k not in unset_env
            },
        )
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def output(self) -> str:
        with self._changed:
            return "".join(self._lines)

    def wait_for(self, text: str, timeout: float = START_TIMEOUT_S) -> str:
        return self.wait_until(lambda output: text in output, text, timeout)

    def wait_until(
        self, done: Callable[[str], bool], what: str, timeout: float = START_TIMEOUT_S
    ) -> str:
        """The output, once `done(output)`; woken by each new line, not by polling."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done(output := "".join(self._lines)):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"{what!r} not seen from {self.args}:\n{output}")
                self._changed.wait(min(remaining, 0.5))
        return output

    def address_of(self, label: str) -> str:
        """The 127.0.0.1:port printed on the row labelled `label` of the listening table."""
        match = re.search(rf"{label}\W+(127\.0\.0\.1:\d+)", self.wait_for(READY_LINE))
        assert match, f"no {label} address in:\n{self.output}"
        return match.group(1)

    def interrupt(self, sig: int = signal.SIGINT, timeout: float = STOP_TIMEOUT_S) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)
