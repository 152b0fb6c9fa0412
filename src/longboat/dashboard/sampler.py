"""The history behind the lag chart: every group's total lag and consumed offsets, sampled by
the dashboard itself every `interval` seconds and kept for `window` seconds (an hour).

Brokers keep no history of offsets, so the chart starts when the dashboard does.  The consume
rate between two samples is how far the group's offsets moved, per second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from longboat.client.admin import Admin, is_retry_queue, total_lag
from longboat.client.errors import ClientError

log = logging.getLogger(__name__)

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    lag: int
    consumed: int


class LagSampler:
    def __init__(
        self,
        admin: Admin,
        *,
        interval: float = 10.0,
        window: float = HOUR,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.admin = admin
        self.interval = interval
        self.window = window
        self.clock = clock
        self._history: dict[str, deque[Sample]] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="dashboard-lag-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.sample_all()
            except ClientError as exc:
                log.warning("lag sample failed: %s", exc)
            await asyncio.sleep(self.interval)

    async def sample_all(self) -> None:
        groups = await self.admin.groups()
        await asyncio.gather(*(self.sample(g) for g in groups), return_exceptions=True)

    async def sample(self, group: str) -> None:
        progress = await self.admin.group_progress(group, with_lag_time=False)
        consumed = sum(p.consumer_offset or 0 for p in progress if not is_retry_queue(p.mq))
        now = self.clock()
        history = self._history.setdefault(group, deque())
        history.append(Sample(now, total_lag(progress), consumed))
        while history and history[0].at < now - self.window:
            history.popleft()

    def series(self, group: str) -> list[dict[str, float]]:
        """Samples oldest first: time (epoch s), lag, and the consume rate (messages/s) since
        the sample before (0 for the first)."""
        out: list[dict[str, float]] = []
        previous: Sample | None = None
        for s in self._history.get(group, ()):
            rate = 0.0
            if previous is not None and s.at > previous.at:
                rate = max(0, s.consumed - previous.consumed) / (s.at - previous.at)
            out.append({"at": s.at, "lag": s.lag, "rate": round(rate, 2)})
            previous = s
        return out
