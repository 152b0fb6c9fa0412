"""A broker of `longboat up --brokers N` in a process of its own (`longboat broker`).

One Python process runs its event loop on one core: brokers sharing the process share that
core, however many the host has.  Each broker of a local cluster therefore runs as a child
`longboat broker` with its own store, so N broker groups take writes on up to N cores.  The
parent keeps the name server (and the dashboard), starts the children in order, and stops
them in reverse with SIGTERM, each answering its held pulls, flushing and unregistering while
the name server is still up.  On Linux a child is also sent SIGTERM when the parent dies
(`PR_SET_PDEATHSIG`), so a killed `up` leaves no broker behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable

from longboat.broker import BrokerConfig

# What `serve` prints once every server of a process listens.
READY_LINE = b"Ctrl-C stops"
START_TIMEOUT_S = 120.0
# A broker's own stop is bounded by its drain and unregister timeouts; this only guards
# against a child that hangs anyway.
STOP_TIMEOUT_S = 120.0
_PR_SET_PDEATHSIG = 1


def child_arguments(member: BrokerConfig, baseline: BrokerConfig) -> list[str]:
    """`longboat broker --key value ...`: the settings where `member` differs from
    `baseline` (what the child reads itself: defaults and $LONGBOAT_<SETTING>)."""
    theirs = baseline.properties()
    args = [sys.executable, "-m", "longboat.cli", "broker"]
    for key, value in member.properties().items():
        if theirs.get(key) != value:
            args += [f"--{key}", value]
    return args


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent goes (Linux only)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class BrokerProcess:
    """`Server` (start/stop) for one broker run as a child process."""

    def __init__(self, member: BrokerConfig, baseline: BrokerConfig) -> None:
        self.config = member
        self.args = child_arguments(member, baseline)
        self.proc: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the child and return once it serves (its READY_LINE); its logs go to this
        process's stderr.  Raises ChildProcessError when it exits or stalls first."""
        preexec: Callable[[], None] | None = (
            _die_with_parent if sys.platform.startswith("linux") else None
        )
        self.proc = await asyncio.create_subprocess_exec(
            *self.args, stdout=asyncio.subprocess.PIPE, preexec_fn=preexec
        )
        assert self.proc.stdout is not None
        printed: list[bytes] = []
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                while READY_LINE not in (line := await self.proc.stdout.readline()):
                    if not line:
                        code = await self.proc.wait()
                        raise ChildProcessError(
                            f"broker {self.name} exited ({code}) before serving: "
                            + b"".join(printed).decode(errors="replace").strip()
                        )
                    printed.append(line)
        except TimeoutError:
            await self.stop()
            raise ChildProcessError(
                f"broker {self.name} did not start in {START_TIMEOUT_S:.0f} s"
            ) from None
        self._drain = asyncio.create_task(self._discard(self.proc.stdout))

    @property
    def name(self) -> str:
        return f"{self.config.broker_name}/{self.config.broker_id}"

    @staticmethod
    async def _discard(stream: asyncio.StreamReader) -> None:
        """Read what the child prints (its stop messages) so it never blocks on a full pipe."""
        while await stream.read(65536):
            pass

    async def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()
        if self._drain is not None:
            await self._drain
