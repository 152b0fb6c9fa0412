"""The hold service: long polling without scans, sleeps or lost wake-ups, for pulls and pops.

Two kinds of request wait here for a message that is not there yet, in one table:

* a **held pull** (PULL_MESSAGE with the suspend flag that found nothing new) waits on one
  queue past its offset.  It is an answer owed on a remoting connection, and the service
  answers it: by re-running the pull without suspend (the injected `answer`) and writing the
  response to the pull's connection.
* a **parked pop** (POP_MESSAGE, gRPC ReceiveMessage, NOTIFICATION that found nothing) waits
  on a whole topic: it has no offset of its own (the group's pop state says what is left), so
  any arrival on the topic its tags filter passes is new to it.  It is a coroutine of the pop
  core, and waking it is setting its event: the coroutine pops again and answers its own
  request (or parks again, a new waiter, until its deadline).  A pop is also woken by what no
  arrival reports — a message back from invisibility, an ack that releases an orderly queue,
  a changed invisible time — through `wake_pops(topic)`.

Both are released by an arrival (`on_arrival`, the store's one listener for both), by their
own timer (`loop.call_at`, one per waiter: 10,000 parked requests cost 10,000 heap entries
and no CPU while nothing happens) or by a graceful stop, which the broker relies on to
answer every long poll before its store closes.

State of one waiter (as data):

    HELD  --arrival past its offset that its filter passes------------------> WOKEN
            (noted on the appender's path, matched a loop turn later)
    WOKEN --its turn in `_answer_woken` (a loop turn later)------------------> ANSWERED
    HELD  --the re-check after registering, or `recheck`: store moved past it-> ANSWERED
    HELD  --`wake_pops(topic)` (pops only: a message visible again, an ack)---> ANSWERED
    HELD, WOKEN --its timer fires---------------------------------------------> ANSWERED
    HELD, WOKEN --stop() (graceful shutdown)-----------------------------------> ANSWERED
    HELD, WOKEN --its connection closes (a pull) / its caller gave up (a pop)--> DROPPED

ANSWERED for a pull: re-run, written to its connection, observers told; for a pop: its event
set (the pop core answers).  DROPPED: nobody is left to answer.

Invariants: a pull is HELD iff it is in its queue's `Waiters` (`_queues[(topic, queue)]`,
long polling only) and in `_by_conn[conn]` and its timer is pending; a pop is HELD iff it is
in its topic's `Waiters` (`_topics[topic]`) and in `_pops` and its timer is pending.  WOKEN:
it left its `Waiters` for `_to_answer` but is still in `_by_conn` / `_pops` with its timer
pending.  Leaving starts with `_release`, which takes it out of `_by_conn` / `_pops` (and
cancels its timer) and says whether it was still there, so a waiter is answered at most once
whoever gets to it first.  `held_pulls` and `held_pops` count HELD and WOKEN, `held_count`
both.  In its `Waiters` a waiter that takes every message is in `every`, one with a tag
filter is in `by_code[c]` for each tags code `c` of its filter (a `TagA || TagB` pull sits in
two; an SQL92 pull sits in `every` and is woken only by an arrival whose properties match
it), so an arrival looks only at the waiters it can wake: a message tagged TagB never visits
the thousand pulls parked for TagA (RocketMQ scans every pull of the queue per arrival).  A
connection keeps its (possibly empty) `_by_conn` entry until it closes, so its close callback
is added once per connection, not once per held pull.

No lost wake-up: `hold` and `park` register first and re-check the store after (RocketMQ
#7358 is the missing re-check) — a message that landed between the request's empty read and
its registration is seen by the re-check, one that lands after is seen by the arrival
listener.  A pull is behind when its queue's max offset passed its offset; a pop when any of
its topic's queues passed the end its empty pop read to (`ends`, taken before that pop).
Behind both, `recheck` (every RECHECK_INTERVAL_S) wakes any waiter the store has passed, as
RocketMQ's 5 s scan does: a safety net, never the way requests are normally answered.

Off the producer's path: an arrival on a queue whose pulls and topic's pops are several is
only noted (O(1), on the appending request's path); finding the waiters it wakes
(`Waiters.take_woken`), releasing them and answering them (a store re-read each for a pull)
happen through `defer`, after the append's own request was answered, WAKE_BATCH answers per
loop turn, so a send's latency does not grow with the consumers parked on its queue
(`test_hold_table.py::test_an_arrival_costs_the_appender_no_per_pull_work`).  A lone waiter
(WAKE_INLINE) is the exception: the arrival answers it at once, ahead of the appending
request's answer, so the consumer's wake-up does not wait for the producer's reply and the
appender pays one answer at most
(`test_hold_table.py::test_a_lone_parked_pull_is_answered_before_the_appender_is`).  A full
table (`max_held` pulls) makes the pull module answer SYSTEM_BUSY, which clients back off
from, rather than PULL_NOT_FOUND, which they would re-send at once; parked pops do not count
against it (each is one running request of its client, bounded by its own concurrency).

Short polling (`longPollingEnable=false`, RocketMQ's semantics for pulls): arrivals do not
wake pulls; a pull is held `shortPollingTimeMills` (at most its own suspendTimeoutMillis) and
then re-run.  Pops are long-polled either way, as RocketMQ's pop polling is.

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
# Woken waiters answered per loop turn (see `_answer_woken`).
WAKE_BATCH = 64
# Waiters an arrival answers at once, before the appender's answer.
WAKE_INLINE = 1
# How often `recheck` looks for waiters a lost wake-up left behind (RocketMQ: 5 s).
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
    """What the table reads of a waiter's subscription filter."""

    @property
    def codes(self) -> frozenset[int] | None:
        """Tags codes that wake the waiter; None: every message."""
        ...

    def matches_properties(self, properties: Mapping[str, str]) -> bool: ...


P = TypeVar("P", bound=ParkedPull)
F = TypeVar("F", bound=WakeFilter)


class Waiter:
    """What the table keeps of either kind: the filter an arrival must pass (`codes` are its
    tags codes; None: every message), the offset the arrival must move its queue's end past,
    and the timer that answers it when nothing does."""

    __slots__ = ("codes", "filter", "offset", "timer")

    def __init__(self, flt: WakeFilter, offset: int) -> None:
        self.filter = flt
        self.codes = flt.codes
        self.offset = offset
        self.timer: Timer | None = None


class HeldPull(Waiter, Generic[P, F]):
    """One parked pull: the request as decoded, the filter it reads through, the command to
    answer and its connection."""

    __slots__ = ("command", "conn", "key", "pull")

    filter: F  # what the re-run reads through

    def __init__(self, conn: Connection, command: RemotingCommand, pull: P, flt: F) -> None:
        super().__init__(flt, pull.queue_offset)
        self.conn = conn
        self.command = command  # answered with the re-run's response
        self.pull = pull  # the typed request, for the re-run
        self.key: QueueKey = (pull.topic, pull.queue_id)


# A pop waits for any arrival on its topic: every queue end is past this offset.
ANY_OFFSET = -1


class ParkedPop(Waiter):
    """One parked pop (or NOTIFICATION): its topic, each queue's end its empty pop read to (for
    the re-check), and the event its coroutine waits on — setting it is the pop's answer."""

    __slots__ = ("ends", "event", "topic")

    def __init__(self, topic: str, flt: WakeFilter, ends: Mapping[int, int]) -> None:
        super().__init__(flt, ANY_OFFSET)
        self.topic = topic
        self.ends = ends
        self.event = asyncio.Event()


class Waiters:
    """The waiters parked on one queue (pulls) or one topic (pops), indexed by the tags codes
    that wake them."""

    __slots__ = ("by_code", "every")

    def __init__(self) -> None:
        self.every: dict[Waiter, None] = {}
        self.by_code: dict[int, dict[Waiter, None]] = {}

    def add(self, waiter: Waiter) -> None:
        if waiter.codes is None:
            self.every[waiter] = None
            return
        for code in waiter.codes:
            waiters = self.by_code.get(code)
            if waiters is None:
                waiters = self.by_code[code] = {}
            waiters[waiter] = None

    def remove(self, waiter: Waiter) -> None:
        if waiter.codes is None:
            self.every.pop(waiter, None)
            return
        for code in waiter.codes:
            waiters = self.by_code.get(code)
            if waiters is not None:
                waiters.pop(waiter, None)
                if not waiters:
                    del self.by_code[code]

    def take_woken(self, new_max: int, tags_code: int, props: Mapping[str, str]) -> list[Waiter]:
        """Remove and return the waiters an arrival with `tags_code` and `props` that moved the
        max offset to `new_max` wakes (an SQL92 pull only when the properties match its
        expression).  When it wakes every waiter taking every message, that whole set is
        dropped at once: the send that stored the message pays no per-waiter removal."""
        woken = [
            waiter
            for waiter in self.every
            if waiter.offset < new_max and waiter.filter.matches_properties(props)
        ]
        if len(woken) == len(self.every):
            self.every = {}
        else:
            for waiter in woken:
                del self.every[waiter]
        tagged = self.by_code.get(tags_code)
        if tagged:
            hits = [waiter for waiter in tagged if waiter.offset < new_max]
            for waiter in hits:
                self.remove(waiter)  # from each of its codes
            woken += hits
        return woken

    def all(self) -> dict[Waiter, None]:
        """Every waiter here, once (one waiting for several tags is listed once)."""
        found = dict(self.every)
        for waiters in self.by_code.values():
            found.update(waiters)
        return found

    def __bool__(self) -> bool:
        return bool(self.every or self.by_code)

    def count_to(self, limit: int) -> int:
        """How many waiters are here (one waiting for several tags counts per tag), counted
        no further than past `limit`."""
        n = len(self.every)
        for waiters in self.by_code.values():
            if n > limit:
                break
            n += len(waiters)
        return n


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
        self, when: float, callback: Callable[[Waiter], object], waiter: Waiter, /
    ) -> Timer: ...


class HoldService(Generic[P, F]):
    """The table of held pulls and parked pops; `P` is the pull request type it holds, `F`
    its filter's."""

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
        """`max_offset` is the store's, read by the re-checks.  `answer(pull)` re-runs a
        released pull and returns its response, which the service writes.  `timers` runs
        the deadlines (the running loop, from `start`, when None); `clock` times wake-ups;
        `defer(fn)` runs `fn` after the current callback (the loop's `call_soon` when None):
        woken waiters are answered through it, off the appending request's path."""
        self._answer = answer
        self._observers: list[HoldObserver] = []
        self._timers = timers
        self._clock = clock
        self._max_offset = max_offset
        self.long_polling = long_polling
        self.short_polling_ms = short_polling_ms
        self.max_held = max_held
        self._queues: dict[QueueKey, Waiters] = {}  # held pulls, by queue
        self._topics: dict[str, Waiters] = {}  # parked pops, by topic
        self._by_conn: dict[Connection, dict[HeldPull[Any, Any], None]] = {}
        self._pops: dict[ParkedPop, None] = {}
        self._pulls = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._defer = defer
        # Arrivals not yet matched against their waiters, and the waiters they woke,
        # answered WAKE_BATCH at a time; both by `_answer_woken`.
        self._arrivals: deque[tuple[QueueKey, int, int, Mapping[str, str], float]] = deque()
        self._to_answer: deque[tuple[Waiter, float]] = deque()
        self._answering = False
        # Figures for the metrics module, read at scrape time: waiters an arrival woke and
        # waiters their timer answered, of each kind.
        self.woken = 0
        self.expired = 0
        self.pops_woken = 0
        self.pops_expired = 0

    def add_observer(self, observer: HoldObserver) -> None:
        """Tell `observer` of every answer the service writes to a held pull (on the loop)."""
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
    def held_pulls(self) -> int:
        return self._pulls

    @property
    def held_pops(self) -> int:
        return len(self._pops)

    @property
    def held_count(self) -> int:
        """Every request waiting here: held pulls and parked pops."""
        return self._pulls + len(self._pops)

    @property
    def full(self) -> bool:
        """`max_held` pulls are held: the pull module refuses more with SYSTEM_BUSY."""
        return self._pulls >= self.max_held

    def parked_pops(self, topic: str) -> int:
        """How many pops (and notifications) wait on `topic` (POLLING_INFO: rare, so counted
        when asked)."""
        return sum(1 for parked in self._pops if parked.topic == topic)

    # ------------------------------------------------------------------ holding

    def hold(self, conn: Connection, command: RemotingCommand, pull: P, flt: F) -> bool:
        """Park `pull` (which read nothing new through `flt`) until an arrival or its
        suspend timeout; False when it cannot be held (the caller answers at once): the
        connection is gone, the service is not started, or `max_held` pulls are held."""
        timers = self._timers
        if self._loop is None or timers is None or conn.closed or self._pulls >= self.max_held:
            return False
        held = HeldPull(conn, command, pull, flt)
        key, suspend_ms = held.key, pull.suspend_timeout_ms
        hold_ms = suspend_ms if self.long_polling else min(self.short_polling_ms, suspend_ms)
        held.timer = timers.call_at(timers.time() + max(0, hold_ms) / 1000, self._expired, held)
        if self.long_polling:
            self._enter(self._queues, key, held)
        mine = self._by_conn.get(conn)
        if mine is None:
            mine = self._by_conn[conn] = {}
            conn.add_close_callback(self.drop_connection)
        mine[held] = None
        self._pulls += 1
        # The re-check: anything stored since the read wakes the pull now.
        if self.long_polling and self._behind(held):
            self._release(held)
            self._respond(held, None)
        return True

    def park(
        self, topic: str, flt: WakeFilter, ends: Mapping[int, int], wait_s: float
    ) -> ParkedPop | None:
        """Park a pop of `topic` that found nothing, its empty pop having read each queue
        to `ends[queue]` (taken before it); its coroutine awaits the returned pop's event,
        set by an arrival `flt` passes, `wake_pops(topic)`, the re-check or `wait_s` running
        out.  None when nothing can park (the service is stopped or not started): the caller
        answers what it has.  Caller: the pop core, with no await between its empty pop and
        this call; it calls `leave` if it stops waiting first."""
        timers = self._timers
        if self._loop is None or timers is None:
            return None
        parked = ParkedPop(topic, flt, ends)
        parked.timer = timers.call_at(timers.time() + max(0.0, wait_s), self._expired, parked)
        self._enter(self._topics, topic, parked)
        self._pops[parked] = None
        # The re-check: anything stored since the empty pop wakes it now.
        if self._behind(parked):
            self._release(parked)
            self._wake(parked)
        return parked

    @staticmethod
    def _enter(index: dict[Any, Waiters], key: object, waiter: Waiter) -> None:
        """Add `waiter` to the `Waiters` of `key` in `index` (`_queues` or `_topics`)."""
        waiters = index.get(key)
        if waiters is None:
            waiters = index[key] = Waiters()
        waiters.add(waiter)

    def leave(self, parked: ParkedPop) -> None:
        """The pop's caller stopped waiting (its call was cancelled): forget it unanswered;
        nothing when it was answered already."""
        self._release(parked)

    # ------------------------------------------------------------------ waking

    def on_arrival(
        self, topic: str, queue_id: int, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> None:
        """Store arrival listener: answer a lone waiter now, or note the arrival for
        `_answer_woken`, which answers the pulls of this queue and the pops of this topic it
        satisfies once the appending request is answered."""
        key = (topic, queue_id)
        pulls = self._queues.get(key)
        pops = self._topics.get(topic)
        if not pulls and not pops:
            return
        if threading.get_ident() != self._loop_thread:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(
                self.on_arrival, topic, queue_id, new_max, tags_code, props
            )
            return
        if not self._answering and (
            (pulls.count_to(WAKE_INLINE) if pulls else 0)
            + (pops.count_to(WAKE_INLINE) if pops else 0)
            <= WAKE_INLINE
        ):
            # One waiter: answered now, ahead of the appending request's own answer (the
            # consumer's wake-up does not wait for the producer's reply); the appender still
            # does at most one answer's work, however many consumers park elsewhere.
            started = self._clock()
            for waiter in self._take_woken(key, new_max, tags_code, props):
                if self._release(waiter):
                    self._wake(waiter, started)
            return
        self._arrivals.append((key, new_max, tags_code, props, self._clock()))
        if not self._answering and self._defer is not None:
            self._answering = True
            self._defer(self._answer_woken)

    def wake_pops(self, topic: str) -> None:
        """Answer every pop parked on `topic`: something no arrival reports may have given
        them a message (one visible again, an ack releasing an orderly queue).  Caller: the
        pop core and the pop adapters, after the change."""
        waiters = self._topics.pop(topic, None)
        if waiters is not None:
            for parked in waiters.all():
                if self._release(parked):
                    self._wake(parked)

    def _take_arrived(self) -> None:
        """Match the noted arrivals against their waiters: the ones they wake leave their
        `Waiters` (WOKEN) for the answer queue."""
        while self._arrivals:
            key, new_max, tags_code, props, started = self._arrivals.popleft()
            woken = self._take_woken(key, new_max, tags_code, props)
            self._to_answer.extend((waiter, started) for waiter in woken)

    def _take_woken(
        self, key: QueueKey, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> list[Waiter]:
        """The pulls of `key` and the pops of its topic an arrival wakes, out of their
        `Waiters` (WOKEN) and counted; a queue or topic left without waiters is forgotten."""
        woken = self._take(self._queues, key, new_max, tags_code, props)
        self.woken += len(woken)
        popped = self._take(self._topics, key[0], new_max, tags_code, props)
        self.pops_woken += len(popped)
        return woken + popped if popped else woken

    @staticmethod
    def _take(
        index: dict[Any, Waiters],
        key: object,
        new_max: int,
        tags_code: int,
        props: Mapping[str, str],
    ) -> list[Waiter]:
        """What the arrival wakes of the `Waiters` of `key` in `index`; forgotten if left empty."""
        waiters = index.get(key)
        if not waiters:
            return []
        woken = waiters.take_woken(new_max, tags_code, props)
        if not waiters:
            del index[key]
        return woken

    def recheck(self) -> int:
        """RocketMQ's periodic scan, kept as a safety net behind the arrival listener (every
        RECHECK_INTERVAL_S): wake every held pull whose queue has moved past its offset and
        every parked pop whose topic has moved past what it read, so a wake-up lost anywhere
        costs one interval, not the request's whole wait.  As in RocketMQ the scan does not
        look at tags: a filtered request re-reads and moves on.  Returns how many it woke."""
        woken: dict[Waiter, None] = {}
        for (topic, queue_id), waiters in list(self._queues.items()):
            max_offset = self._max_offset(topic, queue_id)
            woken.update((held, None) for held in waiters.all() if held.offset < max_offset)
        for waiters in list(self._topics.values()):
            woken.update((parked, None) for parked in waiters.all() if self._behind(parked))
        for waiter in woken:
            self._release(waiter)
            self._wake(waiter)
        return len(woken)

    def _behind(self, waiter: Waiter) -> bool:
        """The store has moved past what `waiter` read."""
        if isinstance(waiter, ParkedPop):
            topic, max_offset = waiter.topic, self._max_offset
            return any(max_offset(topic, queue) > end for queue, end in waiter.ends.items())
        assert isinstance(waiter, HeldPull)
        return self._max_offset(*waiter.key) > waiter.offset

    def _answer_woken(self) -> None:
        """Take the arrived waiters, answer up to WAKE_BATCH of them, then yield the loop and
        come back for the rest: the append that woke them was answered first, and a send
        arriving meanwhile waits for one batch at most, however many consumers were parked."""
        self._take_arrived()
        for _ in range(min(WAKE_BATCH, len(self._to_answer))):
            waiter, started = self._to_answer.popleft()
            if self._release(waiter):  # not answered meanwhile by its timer or a shutdown
                self._wake(waiter, started)
        if self._to_answer and self._defer is not None:
            self._defer(self._answer_woken)
        else:
            self._answering = False

    def _expired(self, waiter: Waiter) -> None:
        waiter.timer = None
        if self._release(waiter):
            if isinstance(waiter, ParkedPop):
                self.pops_expired += 1
            else:
                self.expired += 1
            self._wake(waiter)

    def _wake(self, waiter: Waiter, arrived: float | None = None) -> None:
        """Answer a released waiter — a pop by setting its event, a pull by writing its
        re-run; `arrived` is when the arrival that woke it was heard."""
        if isinstance(waiter, ParkedPop):
            waiter.event.set()
            return
        assert isinstance(waiter, HeldPull)
        try:
            self._respond(waiter, arrived)
        except Exception:
            log.exception("answering a held pull from %s failed", waiter.conn.peer)

    def _respond(self, held: HeldPull[P, F], arrived: float | None) -> None:
        response = self._answer(held)
        held.conn.send(response)
        latency = None if arrived is None else self._clock() - arrived
        for observer in self._observers:
            observer.held_pull_answered(held, response, latency)

    # ------------------------------------------------------------------ leaving

    def _release(self, waiter: Waiter) -> bool:
        """Leave HELD (or WOKEN): out of `_by_conn` / `_pops`, its timer cancelled, out of its
        `Waiters`; False when `waiter` had left already."""
        if isinstance(waiter, ParkedPop):
            if waiter not in self._pops:
                return False
            del self._pops[waiter]
            self._unpark(waiter, self._topics, waiter.topic)
            return True
        assert isinstance(waiter, HeldPull)
        mine = self._by_conn.get(waiter.conn)
        if mine is not None and waiter in mine:
            del mine[waiter]
            self._pulls -= 1
            self._unpark(waiter, self._queues, waiter.key)
            return True
        return False

    @staticmethod
    def _unpark(waiter: Waiter, index: dict[Any, Waiters], key: object) -> None:
        """Cancel the timer and leave its `Waiters` in `index`; the caller has taken `waiter`
        out of `_by_conn` / `_pops`."""
        if waiter.timer is not None:
            waiter.timer.cancel()
            waiter.timer = None
        waiters = index.get(key)
        if waiters is not None:
            waiters.remove(waiter)
            if not waiters:
                del index[key]

    def drop_connection(self, conn: Connection) -> None:
        """Forget the pulls of a closed connection: there is nobody to answer."""
        for held in self._by_conn.pop(conn, {}):
            self._pulls -= 1
            self._unpark(held, self._queues, held.key)

    def answer_all(self) -> int:
        """Graceful shutdown: answer every held pull now (with whatever the store has) and
        wake every parked pop (which answers with what there is); requests arriving after
        this are answered at once instead of held.  Returns how many were answered."""
        self._loop = None
        self._arrivals.clear()
        self._to_answer.clear()  # the woken are still in `_by_conn` / `_pops`: answered below
        everyone: list[Waiter] = [held for mine in self._by_conn.values() for held in mine]
        everyone += self._pops
        for waiter in everyone:
            self._release(waiter)
        for waiter in everyone:
            self._wake(waiter)
        return len(everyone)
