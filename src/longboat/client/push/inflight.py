"""Which queues have listeners running: what a rebalance waits for before releasing a queue.

Invariant: `count[mq]` is the number of listener calls for `mq` that started and have not
returned; `wait_idle(mq)` returns once it is 0.  Consume services wrap each call in
`begin`/`end`, and check `ProcessQueue.dropped` before `begin`, so once a queue is dropped
no new call starts and the wait is bounded by the calls already running.
"""

from __future__ import annotations

import asyncio
import contextlib

from longboat.protocol.types import MessageQueue


class InFlight:
    def __init__(self) -> None:
        self._count: dict[MessageQueue, int] = {}
        self._idle: dict[MessageQueue, asyncio.Event] = {}
        self._all_idle = asyncio.Event()
        self._all_idle.set()

    def begin(self, mq: MessageQueue) -> None:
        self._count[mq] = self._count.get(mq, 0) + 1
        self._all_idle.clear()
        event = self._idle.get(mq)
        if event is not None:
            event.clear()

    def end(self, mq: MessageQueue) -> None:
        left = self._count[mq] - 1
        if left:
            self._count[mq] = left
            return
        del self._count[mq]
        event = self._idle.pop(mq, None)
        if event is not None:
            event.set()
        if not self._count:
            self._all_idle.set()

    async def wait_idle(self, mq: MessageQueue, timeout: float | None = None) -> bool:
        """Wait until no listener of `mq` runs; False if `timeout` passed first."""
        if mq not in self._count:
            return True
        return await _wait(self._idle.setdefault(mq, asyncio.Event()), timeout)

    async def wait_all_idle(self, timeout: float | None = None) -> bool:
        """Wait until no listener runs at all; False if `timeout` passed first."""
        return await _wait(self._all_idle, timeout)


async def _wait(event: asyncio.Event, timeout: float | None) -> bool:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()
            return True
    return False
