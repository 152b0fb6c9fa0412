"""Run a test peer (another RocketMQ client, as a subprocess) and read its JSON-line events.

Every peer program in this folder (the Node.js ali-ons scripts, the Java programs) prints one
JSON object per line on stdout and human-readable logs on stderr. `run_peer` runs one to
completion; `PeerProcess` runs one in the background so a test can wait for particular events
(e.g. a consumer's "ready") while it does something else. Both run the peer under
`peers.lifeline` (`guarded`), so a peer still running when the test session is SIGKILLed dies
with it instead of running on to its own timeout.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

# The guard every server JVM and every peer runs under, so none outlives the test session.
LIFELINE = Path(__file__).resolve().parent / "lifeline.py"


def guarded(command: Sequence[str]) -> list[str]:
    """``command`` run by `peers.lifeline`: the caller gives it as stdin a pipe whose write end
    it keeps open, never written, for as long as the command may live (the kernel closes it
    when the caller dies, however it dies, and the guard then kills the command)."""
    return [sys.executable, str(LIFELINE), *command]


def run_guarded(
    command: Sequence[str], cwd: Path, *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to completion under `guarded`, its output captured as text.

    `subprocess.run` would close a piped stdin at once (nothing to write), which the guard
    reads as its starter's death: the pipe is made here, its write end held until the end."""
    lifeline_in, lifeline_out = os.pipe()
    try:
        return subprocess.run(
            guarded(command),
            cwd=cwd,
            stdin=lifeline_in,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        os.close(lifeline_in)
        os.close(lifeline_out)


def parse_lines(name: str, text: str) -> list[dict[str, Any]]:
    """Parse JSON lines; a non-JSON line on stdout is a bug in the peer, so it fails the test."""
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        if line.strip():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise AssertionError(f"{name} printed a non-JSON line: {line!r}") from exc
    return events


def run_peer(
    name: str, command: Sequence[str], cwd: Path, *, timeout: float, check: bool = True
) -> list[dict[str, Any]]:
    """Run a peer to completion and return its events.

    ``timeout`` (seconds) bounds the subprocess; give the peer a matching timeout option too,
    so it reports its own timeout instead of being killed. With ``check`` (the default) a
    non-zero exit raises AssertionError carrying the exit code, stderr and the events seen,
    because the peer's stderr is what explains an interop failure.
    """
    proc = run_guarded(command, cwd, timeout=timeout)
    events = parse_lines(name, proc.stdout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{name} exited with {proc.returncode}\n"
            f"--- stderr ---\n{proc.stderr}\n--- events ---\n"
            + "\n".join(json.dumps(e) for e in events)
        )
    return events


class PeerProcess:
    """A running peer (e.g. a consumer started before the test produces).

    stdout is read on a thread into a queue so the test can wait for particular events without
    blocking the peer; stderr goes to a temporary file so a chatty peer never stalls on a full
    pipe. Use as a context manager: leaving it stops the peer (SIGTERM, on which every peer
    closes its client cleanly) if it is still running.
    """

    def __init__(self, name: str, command: Sequence[str], cwd: Path) -> None:
        self.name = name
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in __exit__
        self.proc: subprocess.Popen[str] = subprocess.Popen(
            guarded(command),
            cwd=cwd,
            stdin=subprocess.PIPE,  # the lifeline: never written, closed in __exit__
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                event = {"event": "bad_line", "line": line}
            self._queue.put(event)
        self._queue.put(None)

    def events(self, timeout: float) -> Iterator[dict[str, Any]]:
        """Yield events as they arrive until stdout closes; AssertionError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(self._describe(f"no more events within {timeout} s"))
            try:
                event = self._queue.get(timeout=left)
            except queue.Empty:
                raise AssertionError(self._describe(f"no more events within {timeout} s")) from None
            if event is None:
                self._queue.put(None)  # keep signalling end-of-stream to later calls
                return
            self.seen.append(event)
            yield event

    def wait_for(self, event: str, timeout: float) -> dict[str, Any]:
        """Return the next event named ``event`` (e.g. "ready"), failing on timeout or exit."""
        for ev in self.events(timeout):
            if ev.get("event") == event:
                return ev
        raise AssertionError(self._describe(f"exited before printing a {event!r} event"))

    def wait(self, timeout: float, check: bool = True) -> list[dict[str, Any]]:
        """Wait for the peer to exit by itself; return all its events."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(self._describe(f"did not exit within {timeout} s")) from None
        for _ in self.events(timeout=5):
            pass
        if check and self.proc.returncode != 0:
            raise AssertionError(self._describe(f"exited with {self.proc.returncode}"))
        return self.seen

    def stop(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        """SIGTERM the peer (it then closes its client cleanly) and wait."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        """Kill the peer without a clean close."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr(self) -> str:
        """Everything the peer printed on stderr so far."""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()

    def _describe(self, problem: str) -> str:
        return (
            f"{self.name}: {problem} (exit code {self.proc.poll()})\n"
            f"--- stderr ---\n{self.stderr()}\n--- events ---\n"
            + "\n".join(json.dumps(e) for e in self.seen)
        )

    def __enter__(self) -> PeerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.kill()
        finally:
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()
            self._stderr.close()
