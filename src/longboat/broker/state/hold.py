"""The hold service: long polling without scans, sleeps or lost wake-ups.

A pull that finds nothing new (PULL_NOT_FOUND) and carries the suspend flag is parked here
instead of answered.  It is answered — by re-running the pull without suspend — the moment the
store reports an arrival on its queue at or past its offset whose tags code passes its filter,
or when its own timer fires (`loop.call_at`, one per request: 10,000 parked pulls cost 10,000
heap entries and no CPU while nothing happens).

State of one held pull (as data):

    HELD  --arrival: new max > offset, its filter passes-------------> WOKEN
            (noted on the appender's path, matched a loop turn later)
    WOKEN --its turn in `_answer_woken` (a loop turn later)----------> ANSWERED
    HELD, WOKEN --its timer fires------------------------------------> ANSWERED
    HELD, WOKEN --stop() (graceful shutdown)--------------------------> ANSWERED
    HELD, WOKEN --its connection closes-------------------------------> DROPPED (nobody to answer)

Invariants: a pull is HELD iff it is in its queue's `Waiters` (long polling only) and in
`_by_conn[conn]` and its timer is pending; WOKEN iff it left `Waiters` for `_to_answer` but is
still in `_by_conn` with its timer pending.  Answering starts with `_release`, which takes it
out of `_by_conn` (and cancels its timer) and says whether it was still there, so a pull is
answered at most once whoever gets to it first.  `held_count` counts HELD and WOKEN.  In its queue's
`Waiters` a pull that takes every message is in `every`, one with a tag filter is in
`by_code[c]` for each tags code `c` of its filter (a `TagA || TagB` pull sits in two; an SQL92
pull sits in `every` and is woken only by an arrival whose properties match it), so an
arrival looks only at the pulls it can wake: a message tagged TagB never visits the thousand
pulls parked for TagA (RocketMQ scans every pull of the queue per arrival).  A connection
keeps its (possibly empty) `_by_conn` entry until it closes, so its close callback is added
once per connection, not once per held pull.

No lost wake-up: `hold` registers first and re-checks the queue's max offset after (RocketMQ
#7358 is the missing re-check) — a message that landed between the pull's empty read and its
registration is seen by the re-check, one that lands after is seen by the arrival listener.
Behind both, `recheck` (every RECHECK_INTERVAL_S) wakes any held pull its queue has passed, as
RocketMQ's 5 s scan does: a safety net, never the way pulls are normally answered.

Off the producer's path: an arrival on a queue with several parked pulls is only noted (O(1),
on the appending request's path); finding the pulls it wakes (`Waiters.take_woken`), releasing
them and answering them (a store re-read each) happen through `defer`, after the append's own
request was answered, WAKE_BATCH answers per loop turn, so a send's latency does not grow with
the consumers parked on its queue
(`test_hold_table.py::test_an_arrival_costs_the_appender_no_per_pull_work`).  A queue's lone
parked pull (WAKE_INLINE) is the exception: the arrival answers it at once, ahead of the
appending request's answer, so the consumer's wake-up does not wait for the producer's reply
and the appender pays one pull's answer at most
(`test_hold_table.py::test_a_lone_parked_pull_is_answered_before_the_appender_is`).  A full table
(`max_held`) makes the pull module answer SYSTEM_BUSY, which clients back off from, rather than
PULL_NOT_FOUND, which they would re-send at once.

Short polling (`longPollingEnable=false`, RocketMQ's semantics): arrivals do not wake; a pull is
held `shortPollingTimeMills` (at most its own suspendTimeoutMillis) and then re-run.

Answering is injected, not assigned: the service is built with an `answer(pull)` that re-runs
a released pull and returns its response (the pull module's), writes that response to the
pull's connection itself, and then tells every observer (`add_observer`) — the metrics module
counts what held pulls delivered and how long wake-ups took without wrapping anything.  Time
comes from injected clocks too (`timers` for the deadlines, `clock` for wake-up latency), so
the machine can be driven by a test without sockets or sleeps.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from longboat.protocol import RemotingCommand
from longboat.remoting import Connection

log = logging.getLogger(__name__)

QueueKey = tuple[str, int]
# Woken pulls answered per loop turn (see `_answer_woken`).
WAKE_BATCH = 64
# Parked pulls on a queue that its arrival answers at once, before the appender's answer.
WAKE_INLINE = 1
# How often `recheck` looks for held pulls a lost wake-up left behind (RocketMQ: 5 s).
RECHECK_INTERVAL_S = 5.0


class ParkedPull(Protocol):
    """What the table reads of a pull it parks (the core's typed pull request is one)."""

    @property
    def topic(self) -> str: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def suspend_timeout_ms(self) -> int: ...


class WakeFilter(Protocol):
    """What the table reads of a parked pull's subscription filter."""

    @property
    def codes(self) -> frozenset[int] | None:
        """Tags codes that wake the pull; None: every message."""
        ...

    def matches_properties(self, properties: Mapping[str, str]) -> bool: ...


P = TypeVar("P", bound=ParkedPull)
F = TypeVar("F", bound=WakeFilter)


class HeldPull(Generic[P, F]):
    """One parked pull: the request as decoded, the filter it reads through, the command to
    answer and its connection."""

    __slots__ = ("codes", "command", "conn", "filter", "key", "offset", "pull", "timer")

    def __init__(self, conn: Connection, command: RemotingCommand, pull: P, flt: F) -> None:
        self.conn = conn
        self.command = command  # answered with the re-run's response
        self.pull = pull  # the typed request, for the re-run
        self.key: QueueKey = (pull.topic, pull.queue_id)
        self.offset = pull.queue_offset
        self.filter = flt  # what the re-run reads through
        self.codes = flt.codes  # tags codes that wake it; None: every message
        self.timer: Timer | None = None


class Waiters:
    """The pulls parked on one queue, indexed by the tags codes that wake them."""

    __slots__ = ("by_code", "every")

    def __init__(self) -> None:
        self.every: dict[HeldPull[Any, Any], None] = {}
        self.by_code: dict[int, dict[HeldPull[Any, Any], None]] = {}

    def add(self, held: HeldPull[Any, Any]) -> None:
        if held.codes is None:
            self.every[held] = None
            return
        for code in held.codes:
            pulls = self.by_code.get(code)
            if pulls is None:
                pulls = self.by_code[code] = {}
            pulls[held] = None

    def remove(self, held: HeldPull[Any, Any]) -> None:
        if held.codes is None:
            self.every.pop(held, None)
            return
        for code in held.codes:
            pulls = self.by_code.get(code)
            if pulls is not None:
                pulls.pop(held, None)
                if not pulls:
                    del self.by_code[code]

    def take_woken(
        self, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> list[HeldPull[Any, Any]]:
        """Remove and return the pulls an arrival with `tags_code` and `props` that moved the
        max offset to `new_max` wakes (an SQL92 pull only when the properties match its
        expression).  When it wakes every pull taking every message, that whole set is
        dropped at once: the send that stored the message pays no per-pull removal."""
        woken = [
            held
            for held in self.every
            if held.offset < new_max and held.filter.matches_properties(props)
        ]
        if len(woken) == len(self.every):
            self.every = {}
        else:
            for held in woken:
                del self.every[held]
        tagged = self.by_code.get(tags_code)
        if tagged:
            hits = [held for held in tagged if held.offset < new_max]
            for held in hits:
                self.remove(held)  # from each of its codes
            woken += hits
        return woken

    def __bool__(self) -> bool:
        return bool(self.every or self.by_code)

    def at_most(self, limit: int) -> bool:
        """At most `limit` pulls parked here (one waiting for several tags counts per tag),
        found without counting them all."""
        n = len(self.every)
        for pulls in self.by_code.values():
            if n > limit:
                break
            n += len(pulls)
        return n <= limit


class HoldObserver(Protocol):
    def held_pull_answered(
        self, held: HeldPull[Any, Any], response: RemotingCommand, wake_latency_s: float | None
    ) -> None:
        """`response` was written to `held`'s connection.  `wake_latency_s`: for a pull an
        arrival woke, the seconds from the arrival call to the answer being written; None
        for one answered by the re-check, its timer or shutdown."""
        ...


class Timer(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """The deadline clock (an asyncio loop is one)."""

    def time(self) -> float: ...

    def call_at(
        self,
        when: float,
        callback: Callable[[HeldPull[Any, Any]], object],
        held: HeldPull[Any, Any],
        /,
    ) -> Timer: ...


class HoldService(Generic[P, F]):
    """The table of parked pulls; `P` is the pull request type it parks, `F` its filter's."""

    def __init__(
        self,
        max_offset: Callable[[str, int], int],
        answer: Callable[[HeldPull[P, F]], RemotingCommand],
        *,
        long_polling: bool,
        short_polling_ms: int,
        max_held: int,
        timers: Timers | None = None,
        clock: Callable[[], float] = time.perf_counter,
        defer: Callable[[Callable[[], object]], object] | None = None,
    ) -> None:
        """`max_offset` is the store's, read by the re-check.  `answer(pull)` re-runs a
        released pull and returns its response, which the service writes.  `timers` runs
        the deadlines (the running loop, from `start`, when None); `clock` times wake-ups;
        `defer(fn)` runs `fn` after the current callback (the loop's `call_soon` when None):
        woken pulls are answered through it, off the appending request's path."""
        self._answer = answer
        self._observers: list[HoldObserver] = []
        self._timers = timers
        self._clock = clock
        self._max_offset = max_offset
        self.long_polling = long_polling
        self.short_polling_ms = short_polling_ms
        self.max_held = max_held
        self._queues: dict[QueueKey, Waiters] = {}
        self._by_conn: dict[Connection, dict[HeldPull[Any, Any], None]] = {}
        self._count = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._defer = defer
        # Arrivals not yet matched against their queue's waiters, and the pulls they woke,
        # answered WAKE_BATCH at a time; both by `_answer_woken`.
        self._arrivals: deque[tuple[QueueKey, int, int, Mapping[str, str], float]] = deque()
        self._to_answer: deque[tuple[HeldPull[Any, Any], float]] = deque()
        self._answering = False
        # Figures for the metrics module, read at scrape time: pulls answered by an arrival
        # and by their timer.
        self.woken = 0
        self.expired = 0

    def add_observer(self, observer: HoldObserver) -> None:
        """Tell `observer` of every answer the service writes (on the event loop)."""
        self._observers.append(observer)

    def start(self) -> None:
        """Start holding, on the running loop (arrivals from other threads hop onto it)."""
        self._loop = asyncio.get_running_loop()
        if self._timers is None:
            self._timers = self._loop
        if self._defer is None:
            self._defer = self._loop.call_soon
        self._loop_thread = threading.get_ident()

    @property
    def held_count(self) -> int:
        return self._count

    @property
    def full(self) -> bool:
        """`max_held` pulls are parked: the pull module refuses more with SYSTEM_BUSY."""
        return self._count >= self.max_held

    # ------------------------------------------------------------------ holding

    def hold(self, conn: Connection, command: RemotingCommand, pull: P, flt: F) -> bool:
        """Park `pull` (which read nothing new through `flt`) until an arrival or its
        suspend timeout; False when it cannot be held (the caller answers at once): the
        connection is gone, the service is not started, or `max_held` pulls are parked."""
        timers = self._timers
        if self._loop is None or timers is None or conn.closed or self._count >= self.max_held:
            return False
        held = HeldPull(conn, command, pull, flt)
        key, offset, suspend_ms = held.key, held.offset, pull.suspend_timeout_ms
        hold_ms = suspend_ms if self.long_polling else min(self.short_polling_ms, suspend_ms)
        held.timer = timers.call_at(timers.time() + max(0, hold_ms) / 1000, self._expired, held)
        if self.long_polling:
            waiters = self._queues.get(key)
            if waiters is None:
                waiters = self._queues[key] = Waiters()
            waiters.add(held)
        mine = self._by_conn.get(conn)
        if mine is None:
            mine = self._by_conn[conn] = {}
            conn.add_close_callback(self.drop_connection)
        mine[held] = None
        self._count += 1
        # The re-check: anything stored since the read wakes the pull now.
        if self.long_polling and self._max_offset(*key) > offset:
            self._release(held)
            self._respond(held, None)
        return True

    # ------------------------------------------------------------------ waking

    def on_arrival(
        self, topic: str, queue_id: int, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> None:
        """Store arrival listener: answer the queue's lone parked pull now, or note the
        arrival for `_answer_woken`, which answers the pulls of this queue it satisfies once
        the appending request is answered."""
        key = (topic, queue_id)
        waiters = self._queues.get(key)
        if not waiters:
            return
        if threading.get_ident() != self._loop_thread:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(
                self.on_arrival, topic, queue_id, new_max, tags_code, props
            )
            return
        if not self._answering and waiters.at_most(WAKE_INLINE):
            # One pull parked: answered now, ahead of the appending request's own answer (the
            # consumer's wake-up does not wait for the producer's reply); the appender still
            # does at most one pull's work, however many consumers park elsewhere.
            started = self._clock()
            for held in self._take_woken(key, waiters, new_max, tags_code, props):
                if self._release(held):
                    self._wake(held, started)
            return
        self._arrivals.append((key, new_max, tags_code, props, self._clock()))
        if not self._answering and self._defer is not None:
            self._answering = True
            self._defer(self._answer_woken)

    def _take_arrived(self) -> None:
        """Match the noted arrivals against their queues' waiters: the pulls they wake leave
        their queue (WOKEN) for the answer queue."""
        while self._arrivals:
            key, new_max, tags_code, props, started = self._arrivals.popleft()
            waiters = self._queues.get(key)
            if waiters:
                woken = self._take_woken(key, waiters, new_max, tags_code, props)
                self._to_answer.extend((held, started) for held in woken)

    def _take_woken(
        self,
        key: QueueKey,
        waiters: Waiters,
        new_max: int,
        tags_code: int,
        props: Mapping[str, str],
    ) -> list[HeldPull[Any, Any]]:
        """The pulls of `key` an arrival wakes, out of their queue (WOKEN) and counted; a
        queue left without waiters is forgotten."""
        woken = waiters.take_woken(new_max, tags_code, props)
        if not waiters:
            del self._queues[key]
        self.woken += len(woken)
        return woken

    def recheck(self) -> int:
        """RocketMQ's periodic scan, kept as a safety net behind the arrival listener (every
        RECHECK_INTERVAL_S): wake every held pull whose queue has moved past its offset, so a
        wake-up lost anywhere costs one interval, not the pull's whole suspend time.  As in
        RocketMQ the scan does not look at tags: a filtered pull re-reads and moves on.
        Returns how many it woke."""
        woken: dict[HeldPull[P, F], None] = {}
        for (topic, queue_id), waiters in list(self._queues.items()):
            max_offset = self._max_offset(topic, queue_id)
            for pulls in (waiters.every, *waiters.by_code.values()):
                woken.update((held, None) for held in pulls if held.offset < max_offset)
        for held in woken:
            self._release(held)
            self._wake(held)
        return len(woken)

    def _answer_woken(self) -> None:
        """Take the arrived pulls, answer up to WAKE_BATCH of them, then yield the loop and
        come back for the rest: the append that woke them was answered first, and a send
        arriving meanwhile waits for one batch at most, however many consumers were parked."""
        self._take_arrived()
        for _ in range(min(WAKE_BATCH, len(self._to_answer))):
            held, started = self._to_answer.popleft()
            if self._release(held):  # not answered meanwhile by its timer or a shutdown
                self._wake(held, started)
        if self._to_answer and self._defer is not None:
            self._defer(self._answer_woken)
        else:
            self._answering = False

    def _expired(self, held: HeldPull[P, F]) -> None:
        held.timer = None
        if self._release(held):
            self.expired += 1
            self._wake(held)

    def _wake(self, held: HeldPull[P, F], arrived: float | None = None) -> None:
        """Answer a released pull; `arrived` is when the arrival that woke it was heard."""
        try:
            self._respond(held, arrived)
        except Exception:
            log.exception("answering a held pull from %s failed", held.conn.peer)

    def _respond(self, held: HeldPull[P, F], arrived: float | None) -> None:
        response = self._answer(held)
        held.conn.send(response)
        latency = None if arrived is None else self._clock() - arrived
        for observer in self._observers:
            observer.held_pull_answered(held, response, latency)

    # ------------------------------------------------------------------ leaving

    def _release(self, held: HeldPull[P, F]) -> bool:
        """Leave HELD (or WOKEN); False when `held` had left already."""
        mine = self._by_conn.get(held.conn)
        if mine is not None and held in mine:
            del mine[held]
            self._unpark(held)
            return True
        return False

    def _unpark(self, held: HeldPull[P, F]) -> None:
        """Cancel the timer and leave the queue's waiters; the caller has taken `held` out of
        its connection's entry."""
        if held.timer is not None:
            held.timer.cancel()
            held.timer = None
        waiters = self._queues.get(held.key)
        if waiters is not None:
            waiters.remove(held)
            if not waiters:
                del self._queues[held.key]
        self._count -= 1

    def drop_connection(self, conn: Connection) -> None:
        """Forget the pulls of a closed connection: there is nobody to answer."""
        for held in self._by_conn.pop(conn, {}):
            self._unpark(held)

    def answer_all(self) -> int:
        """Graceful shutdown: answer every held pull now (with whatever the store has); pulls
        arriving after this are answered at once instead of held."""
        self._loop = None
        self._arrivals.clear()
        self._to_answer.clear()  # the woken are still in `_by_conn`: answered below
        everyone = [held for mine in self._by_conn.values() for held in mine]
        for held in everyone:
            self._release(held)
        for held in everyone:
            self._wake(held)
        return len(everyone)
