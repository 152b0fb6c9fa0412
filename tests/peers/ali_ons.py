"""Drive the Node.js ali-ons test peer (tests/peers/node) from pytest.

Longboat claims that unmodified RocketMQ clients work against it; the Node.js client ali-ons is
one of them. The scripts in ``tests/peers/node`` wrap ali-ons' producer and push consumer and print
one JSON object per line on stdout; these helpers run them and hand the events to the test.
"""

from __future__ import annotations

import json
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

NODE_DIR = Path(__file__).resolve().parent / "node"

# Exit codes of the scripts (see tests/peers/node/lib/common.js).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3


def node_peer_available() -> bool:
    """True when ``node`` is on PATH and ``npm ci`` has installed ali-ons.

    Tests use this to skip (rather than fail) on machines without Node.js or before
    ``make node-peers`` has run.
    """
    return shutil.which("node") is not None and (NODE_DIR / "node_modules" / "ali-ons").is_dir()


def _script_path(script: str) -> Path:
    """Resolve ``produce.js`` / ``consume`` to the peer script, refusing anything else."""
    name = script if script.endswith(".js") else f"{script}.js"
    path = NODE_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"no node peer script {name!r} in {NODE_DIR}")
    return path


def _command(script: str, args: tuple[str, ...]) -> list[str]:
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    return [node, str(_script_path(script)), *args]


def _parse_lines(text: str) -> list[dict[str, Any]]:
    """Parse JSON lines; a non-JSON line on stdout is a bug in the peer, so it fails the test."""
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        if line.strip():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise AssertionError(f"node peer printed a non-JSON line: {line!r}") from exc
    return events


def run_node_peer(
    script: str, *args: str, timeout: float, check: bool = True
) -> list[dict[str, Any]]:
    """Run a peer script to completion and return its events.

    ``timeout`` (seconds) bounds the subprocess; pass a matching ``--timeout-ms`` too, so the
    script reports its own timeout (exit 3) instead of being killed. With ``check`` (the default)
    a non-zero exit raises AssertionError carrying the exit code, stderr and the events seen,
    because the peer's stderr is what explains an interop failure.
    """
    proc = subprocess.run(
        _command(script, args),
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    events = _parse_lines(proc.stdout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"node peer {script} {' '.join(args)} exited with {proc.returncode}\n"
            f"--- stderr ---\n{proc.stderr}\n--- events ---\n"
            + "\n".join(json.dumps(e) for e in events)
        )
    return events


class NodePeer:
    """A running peer script (e.g. a consumer started before the test produces).

    stdout is read on a thread into a queue so the test can wait for particular events without
    blocking the peer; stderr goes to a temporary file so a chatty peer never stalls on a full
    pipe. Use as a context manager: leaving it stops the peer (SIGTERM, which makes consume.js
    close cleanly) if it is still running.
    """

    def __init__(self, script: str, args: tuple[str, ...]) -> None:
        self.script = script
        self.args = args
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in __exit__
        self.proc: subprocess.Popen[str] = subprocess.Popen(
            _command(script, args),
            cwd=NODE_DIR,
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
        """Wait for the script to exit by itself; return all its events."""
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
        """SIGTERM the peer (consume.js then commits offsets and unregisters) and wait."""
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
            f"node peer {self.script} {' '.join(self.args)}: {problem} "
            f"(exit code {self.proc.poll()})\n--- stderr ---\n{self.stderr()}\n--- events ---\n"
            + "\n".join(json.dumps(e) for e in self.seen)
        )

    def __enter__(self) -> NodePeer:
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
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self._stderr.close()


def start_node_peer(script: str, *args: str) -> NodePeer:
    """Start a peer script in the background; see :class:`NodePeer`.

    Typical use: ``with start_node_peer("consume.js", ...) as c: c.wait_for("ready", 20)``, then
    produce, then ``c.wait(30)``.
    """
    return NodePeer(script, args)
