"""The history behind the lag chart: every group's total lag and consumed offsets, sampled by
the dashboard itself every `interval` seconds and kept for `window` seconds (an hour).

Brokers keep no history of offsets, so the chart starts when the dashboard does.  The consume
rate between two samples is how far the group's offsets moved, per second.

The Topics page's rates come from the same samples: a topic's in rate is how far the ends of
its queues moved between the last two samples, per second; its out rate, how far every
group's offsets on it moved (summed over the groups).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from longboat.client.admin import Admin, is_retry_queue, total_lag
from longboat.client.errors import ClientError

log = logging.getLogger(__name__)

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    lag: int
    consumed: int
    # The same, per topic (the out rates of the Topics page).
    consumed_by_topic: dict[str, int] = field(default_factory=dict)


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
        # Per user topic, its last two (time, sum of its queues' ends).
        self._ends: dict[str, deque[tuple[float, int]]] = {}
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
        groups, topics = await asyncio.gather(self.admin.groups(), self.admin.user_topics())
        await asyncio.gather(
            *(self.sample(g) for g in groups),
            *(self.sample_topic(t) for t in topics),
            return_exceptions=True,
        )

    async def sample_topic(self, topic: str) -> None:
        ends = sum(q.max_offset for q in await self.admin.topic_status(topic))
        self._ends.setdefault(topic, deque(maxlen=2)).append((self.clock(), ends))

    async def sample(self, group: str) -> None:
        progress = await self.admin.group_progress(group, with_lag_time=False)
        by_topic: dict[str, int] = {}
        for p in progress:
            if not is_retry_queue(p.mq):
                by_topic[p.mq.topic] = by_topic.get(p.mq.topic, 0) + (p.consumer_offset or 0)
        now = self.clock()
        history = self._history.setdefault(group, deque())
        history.append(Sample(now, total_lag(progress), sum(by_topic.values()), by_topic))
        while history and history[0].at < now - self.window:
            history.popleft()

    def topic_rates(self) -> dict[str, dict[str, float]]:
        """Per topic sampled twice: messages in and out per second over the last interval."""
        rates: dict[str, dict[str, float]] = {}
        for topic, ends in self._ends.items():
            if len(ends) == 2 and ends[1][0] > ends[0][0]:
                rate = max(0, ends[1][1] - ends[0][1]) / (ends[1][0] - ends[0][0])
                rates[topic] = {"in": round(rate, 2), "out": 0.0}
        for history in self._history.values():
            if len(history) < 2 or history[-1].at <= history[-2].at:
                continue
            before, after = history[-2], history[-1]
            for topic, consumed in after.consumed_by_topic.items():
                moved = max(0, consumed - before.consumed_by_topic.get(topic, consumed))
                row = rates.setdefault(topic, {"in": 0.0, "out": 0.0})
                row["out"] = round(row["out"] + moved / (after.at - before.at), 2)
        return rates

    def consume_rates(self) -> dict[str, float]:
        """Per group sampled twice: its consume rate (messages/s) over the last interval."""
        return {
            group: series[-1]["rate"]
            for group in self._history
            if len(series := self.series(group)) >= 2
        }

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
