"""Clocks and connections a state-machine test drives by hand: no sockets, no sleeps.

`fake_connection()` is a real `Connection` over a transport that only records what was
written, so the broker's tables see exactly the type they see in production."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Any, cast

from longboat.protocol import FrameDecoder, RemotingCommand
from longboat.remoting import Connection

_ports = itertools.count(40000)


class FakeClock:
    """A clock that moves only when the test says so (`now += seconds`)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class RecordingTransport:
    """Enough of an asyncio transport for a `Connection`: it decodes what is written."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.closed = False
        self._decoder = FrameDecoder()
        self.written: list[RemotingCommand] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", self.port) if name == "peername" else default

    def write(self, data: bytes) -> None:
        self._decoder.feed(data)
        while (cmd := self._decoder.next_command()) is not None:
            self.written.append(cmd)

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(bytes(chunk) for chunk in chunks))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True


def fake_connection() -> tuple[Connection, RecordingTransport]:
    """A connection from 127.0.0.1 on a port of its own, and the transport that records its
    writes."""
    transport = RecordingTransport(next(_ports))
    return Connection(cast(asyncio.Transport, transport), None), transport


class FakeTimer:
    __slots__ = ("args", "callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimers:
    """`time()` and `call_at()` like an event loop's, but time moves by `advance(seconds)`,
    which runs every timer that came due, in deadline order."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self._heap: list[tuple[float, int, FakeTimer]] = []
        self._seq = itertools.count()

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[..., object], *args: Any) -> FakeTimer:
        timer = FakeTimer(when, callback, args)
        heapq.heappush(self._heap, (when, next(self._seq), timer))
        return timer

    @property
    def pending(self) -> int:
        return sum(1 for _, _, timer in self._heap if not timer.cancelled)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        while self._heap and self._heap[0][0] <= self.now:
            _, _, timer = heapq.heappop(self._heap)
            if not timer.cancelled:
                timer.callback(*timer.args)
