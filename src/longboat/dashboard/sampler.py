"""The history behind the lag chart: every group's total lag and consumed offsets, sampled by
the dashboard itself every `interval` seconds and kept for `window` seconds (an hour).

Brokers keep no history of offsets, so the chart starts when the dashboard does.  The consume
rate between two samples is how far the group's offsets moved, per second.

The Topics page's rates come from the same samples: a topic's in rate is how far the ends of
its queues moved between the last two samples, per second; its out rate, how far every
group's offsets on it moved (summed over the groups).

The Replication page's lag in seconds comes from here too: each master's commit-log end,
sampled at the same pace and kept for `replication_window` seconds
(`longboat.client.replication.seconds_behind` reads it).
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
from longboat.client.replication import log_ends
from longboat.client.tasks import BackgroundTask
from longboat.protocol.types import MASTER_ID

log = logging.getLogger(__name__)

HOUR = 3600.0
# A slave further behind than this shows as "at least" it: a short history is enough to tell
# a slave that keeps up from one that does not.
REPLICATION_WINDOW = 300.0


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
        replication_window: float = REPLICATION_WINDOW,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.admin = admin
        self.interval = interval
        self.window = window
        self.clock = clock
        self._history: dict[str, deque[Sample]] = {}
        # Per user topic, its last two (time, sum of its queues' ends).
        self._ends: dict[str, deque[tuple[float, int]]] = {}
        self.replication_window = replication_window
        # Per master's address, its commit-log ends.
        self._log_ends: dict[str, deque[tuple[float, int]]] = {}
        self._task = BackgroundTask()

    def start(self) -> None:
        self._task.start(self._run(), "dashboard-lag-sampler")

    async def stop(self) -> None:
        await self._task.stop()

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
            self.sample_masters(),
            return_exceptions=True,
        )

    async def sample_masters(self) -> None:
        """Each master's commit-log end now; a broker that is no longer a master loses its
        history (a new master's starts afresh)."""
        info = await self.admin.cluster_info()
        masters = [addr for *_, broker_id, addr in info.members() if broker_id == MASTER_ID]
        ends = await log_ends(self.admin, masters)
        now = self.clock()
        self._log_ends = {addr: self._log_ends.get(addr, deque()) for addr in masters}
        for addr, end in ends.items():
            history = self._log_ends[addr]
            if end is not None:
                history.append((now, end))
            while history and history[0][0] < now - self.replication_window:
                history.popleft()

    def log_end_histories(self) -> dict[str, list[tuple[float, int]]]:
        """Per master's address, its sampled (time, commit-log end), oldest first."""
        return {addr: list(history) for addr, history in self._log_ends.items()}

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
