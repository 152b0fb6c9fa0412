"""Orderly-consumption queue locks, the table behind LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42)
(`handlers/locks.py`).

An orderly push consumer processes a queue only while it holds the broker's lock on it, so two
members of a group never consume one queue at once.  Clients re-lock every 20 s and trust a
lock for 30 s; the broker lets a lock lapse after 60 s without a refresh, which is what lets a
crashed client's queues move on.

State (one entry per (group, queue), as data):

    FREE --lock(c)--> HELD(c, t=now)
    HELD(c, t) --lock(c)--> HELD(c, now)          refresh
    HELD(c, t) --lock(d), now - t <= max_live--> HELD(c, t)   refused: d gets nothing
    HELD(c, t) --lock(d), now - t >  max_live--> HELD(d, now) the lapsed lock moves
    HELD(c, t) --unlock(c)--> FREE
    HELD(c, t) --unlock(d)--> HELD(c, t)          only the holder unlocks

Invariants: a queue is held by at most one client id at any instant; the answer to a lock
request is exactly the subset of its queues the requester holds when the call returns.  A
closed connection does NOT release its locks (as in RocketMQ): the client still trusts its
lock for up to 30 s, so handing the queue on at once could let two clients consume it.

Time comes from an injected monotonic clock (seconds), so tests drive expiry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from longboat.protocol.types import MessageQueue

# rocketmq.broker.rebalance.lockMaxLiveTime
LOCK_MAX_LIVE_S = 60.0


@dataclass(slots=True)
class _Held:
    client_id: str
    refreshed: float


class QueueLockTable:
    def __init__(
        self,
        *,
        max_live_s: float = LOCK_MAX_LIVE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_live_s = max_live_s
        self._clock = clock
        # The key is (topic, queue id): a broker answers only for its own queues, so the
        # brokerName a client puts in the request is carried back, not matched.
        self._groups: dict[str, dict[tuple[str, int], _Held]] = {}

    def _live(self, held: _Held | None, now: float) -> bool:
        return held is not None and now - held.refreshed <= self.max_live_s

    def lock(self, group: str, client_id: str, mqs: Iterable[MessageQueue]) -> list[MessageQueue]:
        """Lock (or refresh) what is free, lapsed or already ours; the queues now held."""
        now = self._clock()
        table = self._groups.setdefault(group, {})
        granted: list[MessageQueue] = []
        for mq in mqs:
            key = (mq.topic, mq.queue_id)
            held = table.get(key)
            if held is not None and held.client_id != client_id and self._live(held, now):
                continue
            table[key] = _Held(client_id, now)
            granted.append(mq)
        return granted

    def unlock(self, group: str, client_id: str, mqs: Iterable[MessageQueue]) -> None:
        table = self._groups.get(group)
        if not table:
            return
        for mq in mqs:
            key = (mq.topic, mq.queue_id)
            held = table.get(key)
            if held is not None and held.client_id == client_id:
                del table[key]
        if not table:
            del self._groups[group]

    def holder(self, group: str, topic: str, queue_id: int) -> str | None:
        """The client id holding a live lock on the queue, None when free or lapsed."""
        held = self._groups.get(group, {}).get((topic, queue_id))
        return held.client_id if held is not None and self._live(held, self._clock()) else None

    def expire(self) -> int:
        """Forget lapsed locks (they already count as free); returns how many went."""
        now = self._clock()
        dropped = 0
        for group in list(self._groups):
            table = self._groups[group]
            for key in [k for k, held in table.items() if not self._live(held, now)]:
                del table[key]
                dropped += 1
            if not table:
                del self._groups[group]
        return dropped
