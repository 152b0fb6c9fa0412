"""Parked pops (gRPC ReceiveMessage and remoting POP_MESSAGE), woken by the store's arrivals
on their topic.

A receive that popped nothing parks an `asyncio.Event` here under its topic and the tags
codes its filter accepts, with no await between the empty pop and the parking, so an arrival
cannot slip between them (arrivals are reported on the event loop).  The store's arrival
listener sets the events of the receives the arrival may satisfy; the receive then pops again.
A woken receive that still finds nothing (another consumer of the group was faster) parks
again until its deadline.

Why not the pulls' hold service (`state/hold.py`): a held pull is an answer owed on a remoting
connection, keyed by one queue and an offset, woken when that queue passes the offset, and
answered by the service itself.  A parked pop is a coroutine (gRPC's or remoting's) waiting on
a whole topic with no offset of its own — the group's pop state says what is left — and it is
also woken by what no arrival reports: a message coming back from invisibility, an ack or a
changed invisible time.  Parking pops there would give the hold service a second key, a second
kind of waiter and wake-ups without arrivals; this list stays the smaller design.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping


class Waiter:
    __slots__ = ("codes", "event", "topic")

    def __init__(self, topic: str, codes: frozenset[int] | None) -> None:
        self.topic = topic
        self.codes = codes  # tags codes that wake it; None: every message
        self.event = asyncio.Event()


class ReceiveWakeups:
    def __init__(self) -> None:
        self._by_topic: dict[str, dict[Waiter, None]] = {}
        self.woken = 0

    def park(self, topic: str, codes: frozenset[int] | None) -> Waiter:
        waiter = Waiter(topic, codes)
        self._by_topic.setdefault(topic, {})[waiter] = None
        return waiter

    def parked(self, topic: str) -> int:
        """How many pops wait on `topic` (POLLING_INFO)."""
        return len(self._by_topic.get(topic, ()))

    def unpark(self, waiter: Waiter) -> None:
        waiters = self._by_topic.get(waiter.topic)
        if waiters is not None:
            waiters.pop(waiter, None)
            if not waiters:
                del self._by_topic[waiter.topic]

    def on_arrival(
        self, topic: str, queue_id: int, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> None:
        """Store arrival listener."""
        waiters = self._by_topic.get(topic)
        if not waiters:
            return
        for waiter in waiters:
            if waiter.codes is None or tags_code in waiter.codes:
                if not waiter.event.is_set():
                    self.woken += 1
                waiter.event.set()

    def wake_topic(self, topic: str) -> None:
        """Wake every receive parked on `topic` (a message became visible again)."""
        for waiter in self._by_topic.get(topic, {}):
            waiter.event.set()

    def wake_all(self) -> None:
        """Shutdown: every parked receive answers now."""
        for waiters in self._by_topic.values():
            for waiter in waiters:
                waiter.event.set()
