"""The hold service driven by hand, one transition at a time (the table in `hold.py`), with
fake deadlines and a fake latency clock: no sockets, no sleeps.  The same machine runs end to
end over real sockets in `test_hold_core.py` (pulls) and `test_pop_wire.py` (pops).

Each test parks pulls or pops, then feeds one event — an arrival, a deadline, a closed
connection, a pop's caller leaving, shutdown — and checks which were answered, how often (at
most once), what was written to the pulls' connections, which pops' events were set, and what
the observers heard."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from longboat.broker.core.message_filter import MessageFilter
from longboat.broker.services.metrics import hold_families
from longboat.broker.state.hold import WAKE_BATCH, HeldPull, HoldService, ParkedPop
from longboat.protocol import RemotingCommand, RequestCode
from longboat.remoting import Connection

from .fakes import FakeClock, FakeTimers, RecordingTransport, fake_connection

TOPIC = "T"
TAG_A, TAG_B, TAG_C = 101, 202, 303
SUSPEND_MS = 30_000


@dataclass(frozen=True, slots=True)
class Pull:
    """What the table reads of a parked pull."""

    topic: str
    queue_id: int
    queue_offset: int
    suspend_timeout_ms: int


Held = HeldPull[Pull, MessageFilter]


@dataclass
class Rig:
    """A started hold service over a fake store's max offsets."""

    service: HoldService[Pull, MessageFilter]
    timers: FakeTimers
    clock: FakeClock
    max_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    answered: list[Held] = field(default_factory=list)
    heard: list[tuple[Held, RemotingCommand, float | None]] = field(default_factory=list)
    transports: dict[Connection, RecordingTransport] = field(default_factory=dict)
    answer_takes_s: float = 0.0  # of the fake clock, per re-read

    def connection(self) -> Connection:
        conn, transport = fake_connection()
        self.transports[conn] = transport
        return conn

    def hold(
        self,
        conn: Connection | None = None,
        *,
        queue: int = 0,
        offset: int = 0,
        codes: frozenset[int] | None = None,
        suspend_ms: int = SUSPEND_MS,
    ) -> tuple[bool, RemotingCommand, Connection]:
        conn = conn or self.connection()
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"queueOffset": str(offset)})
        pull = Pull(TOPIC, queue, offset, suspend_ms)
        held = self.service.hold(conn, request, pull, MessageFilter(codes=codes))
        return held, request, conn

    def park(
        self,
        *,
        codes: frozenset[int] | None = None,
        ends: dict[int, int] | None = None,
        wait_s: float = SUSPEND_MS / 1000,
    ) -> ParkedPop:
        """A pop of the topic that found nothing, having read each queue to `ends` (by
        default queue 0 to its current end)."""
        if ends is None:
            ends = {0: self.max_offsets.get((TOPIC, 0), 0)}
        parked = self.service.park(TOPIC, MessageFilter(codes=codes), ends, wait_s)
        assert parked is not None
        return parked

    def arrive(self, tags_code: int, *, queue: int = 0) -> None:
        """A message lands on the queue: its max offset moves one on, then the listener."""
        key = (TOPIC, queue)
        self.max_offsets[key] = self.max_offsets.get(key, 0) + 1
        self.service.on_arrival(TOPIC, queue, self.max_offsets[key], tags_code, {})

    def written(self, conn: Connection) -> list[RemotingCommand]:
        return self.transports[conn].written

    def held_pull_answered(
        self, held: HeldPull[Any, Any], response: RemotingCommand, wake_latency_s: float | None
    ) -> None:
        self.heard.append((held, response, wake_latency_s))


def answer(rig: Rig, held: Held) -> RemotingCommand:
    """The answerer: what the pull module would re-read, reduced to the offset it stood at."""
    rig.answered.append(held)
    rig.clock.now += rig.answer_takes_s
    return held.command.make_response(remark=f"re-read from {held.offset}")


def make_rig(
    *,
    long_polling: bool = True,
    short_polling_ms: int = 1000,
    max_held: int = 100,
    defer: Callable[[Callable[[], object]], object] | None = None,
) -> Rig:
    """`defer` runs the answers of woken pulls; at once unless a test holds them back."""
    timers, clock = FakeTimers(), FakeClock()
    rig: Rig
    service: HoldService[Pull, MessageFilter] = HoldService(
        lambda topic, queue: rig.max_offsets.get((topic, queue), 0),
        lambda held: answer(rig, held),
        long_polling=long_polling,
        short_polling_ms=short_polling_ms,
        max_held=max_held,
        timers=timers,
        clock=clock,
        defer=defer or (lambda fn: fn()),
    )
    rig = Rig(service, timers, clock)
    service.add_observer(rig)
    return rig


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    made = make_rig()
    made.service.start()
    yield made
    made.service.answer_all()


# ---------------------------------------------------------------------- HELD → ANSWERED


async def test_an_arrival_past_the_offset_answers_the_pull_once(rig: Rig) -> None:
    held, request, conn = rig.hold(offset=0)
    assert held and rig.service.held_count == 1 and rig.timers.pending == 1
    rig.arrive(TAG_A)
    assert [h.command for h in rig.answered] == [request]
    assert [r.opaque for r in rig.written(conn)] == [request.opaque]
    assert rig.written(conn)[0].remark == "re-read from 0"
    assert rig.service.held_count == 0 and rig.timers.pending == 0  # its timer went with it
    assert (rig.service.woken, rig.service.expired) == (1, 0)
    # Answered at most once: later arrivals and its old deadline find nothing.
    rig.arrive(TAG_A)
    rig.timers.advance(SUSPEND_MS / 1000 + 1)
    assert len(rig.answered) == 1 and len(rig.written(conn)) == 1


async def test_the_deadline_answers_a_pull_nothing_woke(rig: Rig) -> None:
    assert rig.hold(offset=0, suspend_ms=500)[0]
    _, request, conn = rig.hold(queue=1, offset=0, suspend_ms=500)
    rig.timers.advance(0.499)
    assert rig.answered == [] and rig.service.held_count == 2
    rig.timers.advance(0.001)
    assert len(rig.answered) == 2 and request in [h.command for h in rig.answered]
    assert len(rig.written(conn)) == 1
    assert (rig.service.woken, rig.service.expired, rig.service.held_count) == (0, 2, 0)
    rig.arrive(TAG_A, queue=1)  # too late: nobody is parked any more
    assert len(rig.answered) == 2


async def test_shutdown_answers_every_held_pull_and_holds_no_more(rig: Rig) -> None:
    parked = [rig.hold(queue=q)[1] for q in range(3)]
    assert rig.service.answer_all() == 3
    assert sorted(h.command.opaque for h in rig.answered) == sorted(r.opaque for r in parked)
    assert rig.service.held_count == 0 and rig.timers.pending == 0
    held, _, _ = rig.hold()
    assert not held  # answered at once by the caller from now on


# ---------------------------------------------------------------------- what an arrival wakes


@pytest.mark.parametrize(
    ("filter_codes", "arrival", "woken"),
    [
        (None, TAG_A, True),  # subscribes to everything
        (frozenset({TAG_A}), TAG_A, True),
        (frozenset({TAG_A}), TAG_B, False),  # a TagB message never visits TagA's pulls
        (frozenset({TAG_A, TAG_B}), TAG_B, True),  # TagA || TagB: either wakes it
        (frozenset({TAG_A, TAG_B}), TAG_C, False),
    ],
)
async def test_an_arrival_wakes_only_pulls_whose_filter_passes_its_tag(
    rig: Rig, filter_codes: frozenset[int] | None, arrival: int, woken: bool
) -> None:
    _, _, conn = rig.hold(codes=filter_codes)
    rig.arrive(arrival)
    assert len(rig.written(conn)) == (1 if woken else 0)
    assert rig.service.held_count == (0 if woken else 1)
    if woken:  # and only once, though it sits under two codes
        rig.arrive(TAG_A)
        rig.arrive(TAG_B)
        assert len(rig.written(conn)) == 1


async def test_an_arrival_wakes_only_pulls_below_the_new_end_on_its_queue(rig: Rig) -> None:
    rig.max_offsets[(TOPIC, 0)] = 4
    _, _, behind = rig.hold(offset=4)
    _, _, ahead = rig.hold(offset=6)  # asked past the end: waits for the message at 6
    _, _, elsewhere = rig.hold(queue=1, offset=0)
    rig.arrive(TAG_A)  # offset 4 lands: max 5
    assert (len(rig.written(behind)), len(rig.written(ahead))) == (1, 0)
    rig.arrive(TAG_A)  # max 6: still not past 6
    assert len(rig.written(ahead)) == 0
    rig.arrive(TAG_A)  # max 7
    assert len(rig.written(ahead)) == 1
    assert len(rig.written(elsewhere)) == 0 and rig.service.held_count == 1


async def test_a_message_stored_before_registration_is_seen_by_the_recheck(rig: Rig) -> None:
    """The lost wake-up (RocketMQ #7358): the read found nothing, then a message landed, then
    the pull registered — the re-check after registering answers it at once."""
    rig.max_offsets[(TOPIC, 0)] = 1  # landed between the pull's empty read at 0 and now
    held, request, conn = rig.hold(offset=0)
    assert held  # taken (the caller must not answer too) ...
    assert [r.opaque for r in rig.written(conn)] == [request.opaque]  # ... and answered
    assert rig.service.held_count == 0 and rig.timers.pending == 0
    assert [latency for _, _, latency in rig.heard] == [None]  # no arrival woke it


# ---------------------------------------------------------------------- HELD → DROPPED


async def test_a_closed_connection_drops_its_pulls_unanswered(rig: Rig) -> None:
    _, _, gone = rig.hold()
    rig.hold(gone, queue=1)
    _, _, staying = rig.hold()
    gone.close()
    assert rig.service.held_count == 1 and rig.timers.pending == 1
    rig.arrive(TAG_A)
    rig.arrive(TAG_A, queue=1)
    rig.timers.advance(SUSPEND_MS / 1000)
    assert rig.written(gone) == []
    assert len(rig.written(staying)) == 1
    held, _, _ = rig.hold(gone)
    assert not held  # a closed connection is never parked


# ---------------------------------------------------------------------- refusals


async def test_past_max_held_the_caller_answers_at_once() -> None:
    rig = make_rig(max_held=2)
    rig.service.start()
    assert [rig.hold()[0] for _ in range(3)] == [True, True, False]
    rig.arrive(TAG_A)
    assert rig.hold()[0]  # room again once answered


async def test_a_service_not_started_holds_nothing() -> None:
    rig = make_rig()
    held, _, _ = rig.hold()
    assert not held and rig.service.held_count == 0 and rig.timers.pending == 0


# ---------------------------------------------------------------------- short polling


async def test_short_polling_ignores_arrivals_and_rereads_after_its_interval() -> None:
    rig = make_rig(long_polling=False, short_polling_ms=1000)
    rig.service.start()
    _, _, long_wait = rig.hold(suspend_ms=SUSPEND_MS)
    _, _, short_wait = rig.hold(suspend_ms=300)  # its own suspend is shorter: that wins
    rig.arrive(TAG_A)
    assert rig.answered == []
    rig.timers.advance(0.3)
    assert (len(rig.written(short_wait)), len(rig.written(long_wait))) == (1, 0)
    rig.timers.advance(0.7)
    assert len(rig.written(long_wait)) == 1
    assert (rig.service.woken, rig.service.expired) == (0, 2)


# ---------------------------------------------------------------------- observers


async def test_observers_hear_every_answer_with_the_wake_latency_of_woken_ones(rig: Rig) -> None:
    second: list[float | None] = []

    class Second:
        def held_pull_answered(
            self, held: HeldPull[Any, Any], response: RemotingCommand, wake_latency_s: float | None
        ) -> None:
            second.append(wake_latency_s)

    rig.service.add_observer(Second())
    _, woken_request, _ = rig.hold(codes=frozenset({TAG_A}))
    _, timed_request, _ = rig.hold(codes=frozenset({TAG_B}), suspend_ms=100)
    rig.answer_takes_s = 0.002
    rig.arrive(TAG_A)
    rig.timers.advance(0.1)
    assert [(h.command, r.opaque, lat) for h, r, lat in rig.heard] == [
        (woken_request, woken_request.opaque, pytest.approx(0.002)),
        (timed_request, timed_request.opaque, None),
    ]
    assert second == [pytest.approx(0.002), None]


async def test_an_arrival_on_another_thread_is_handled_on_the_loop(rig: Rig) -> None:
    _, _, conn = rig.hold()
    rig.max_offsets[(TOPIC, 0)] = 1
    thread = threading.Thread(target=rig.service.on_arrival, args=(TOPIC, 0, 1, TAG_A, {}))
    thread.start()
    thread.join()
    assert rig.written(conn) == []  # not answered on the store's thread ...
    await asyncio.sleep(0)
    assert len(rig.written(conn)) == 1  # ... but on the loop, right after


# ---------------------------------------------------------------------- off the producer's path


async def test_woken_pulls_are_answered_after_the_arrival_a_batch_per_turn() -> None:
    """The arrival only releases the pulls it wakes; their re-reads and answers run later,
    WAKE_BATCH per loop turn, so the append's own request is answered first."""
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append, max_held=1000)
    rig.service.start()
    conns = [rig.hold(offset=0)[2] for _ in range(WAKE_BATCH * 2 + 5)]
    rig.arrive(TAG_A)
    assert rig.answered == [] and len(turns) == 1  # woken, not yet answered
    rig.arrive(TAG_A)  # already woken: not woken twice
    for answered in (WAKE_BATCH, 2 * WAKE_BATCH, 2 * WAKE_BATCH + 5):
        turns.pop(0)()
        assert len(rig.answered) == answered
    assert turns == [] and rig.service.held_count == 0
    assert all(len(rig.written(conn)) == 1 for conn in conns)
    rig.service.answer_all()


async def test_an_arrival_costs_the_appender_no_per_pull_work() -> None:
    """The append's own call only notes the arrival: finding the 1,000 pulls it wakes is
    deferred with their answers, so the send is answered before any per-pull work runs
    (issue #13: a send's latency must not grow with the consumers parked on its queue)."""
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append, max_held=1000)
    rig.service.start()
    for _ in range(1000):
        rig.hold(offset=0)
    rig.arrive(TAG_A)
    rig.arrive(TAG_A)
    assert rig.service.woken == 0 and rig.answered == [] and len(turns) == 1
    turns.pop(0)()
    assert rig.service.woken == 1000 and len(rig.answered) == WAKE_BATCH
    while turns:
        turns.pop(0)()
    assert len(rig.answered) == 1000 and rig.service.held_count == 0
    rig.service.answer_all()


async def test_a_lone_parked_pull_is_answered_before_the_appender_is() -> None:
    """One pull parked on the queue: the arrival answers it at once, so the consumer's
    wake-up does not wait for the appending request's own answer; that request pays one
    pull's answer at most."""
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append)
    rig.service.start()
    _, request, conn = rig.hold(offset=0)
    rig.arrive(TAG_A)
    assert [r.opaque for r in rig.written(conn)] == [request.opaque]
    assert turns == [] and rig.service.held_count == 0 and rig.service.woken == 1


async def test_a_lone_pull_the_arrival_does_not_match_stays_parked() -> None:
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append)
    rig.service.start()
    _, _, conn = rig.hold(offset=0, codes=frozenset({TAG_B}))
    rig.arrive(TAG_A)
    assert rig.written(conn) == [] and turns == [] and rig.service.held_count == 1
    rig.arrive(TAG_B)
    assert len(rig.written(conn)) == 1 and rig.service.held_count == 0


async def test_two_parked_pulls_are_answered_after_the_appender() -> None:
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append)
    rig.service.start()
    conns = [rig.hold(offset=0)[2], rig.hold(offset=0, codes=frozenset({TAG_A}))[2]]
    rig.arrive(TAG_A)
    assert rig.answered == [] and len(turns) == 1
    turns.pop(0)()
    assert all(len(rig.written(conn)) == 1 for conn in conns)


async def test_shutdown_answers_pulls_woken_but_not_yet_answered() -> None:
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append)
    rig.service.start()
    woken = [rig.hold(offset=0)[2], rig.hold(offset=0)[2]]
    still = rig.hold(queue=1, offset=0)[2]
    rig.arrive(TAG_A)
    assert rig.answered == []
    assert rig.service.answer_all() == 3
    assert all(len(rig.written(conn)) == 1 for conn in [*woken, still])


# ---------------------------------------------------------------------- the safety net


async def test_the_recheck_recovers_a_wake_up_that_was_lost(rig: Rig) -> None:
    """A message stored without its arrival reaching the service (lost on purpose): the
    periodic re-check finds the queue past the pull's offset and answers it."""
    _, request, conn = rig.hold(offset=0)
    _, _, waiting = rig.hold(queue=1, offset=0)
    rig.max_offsets[(TOPIC, 0)] = 1  # stored; on_arrival never called
    assert rig.answered == []
    assert rig.service.recheck() == 1
    assert [r.opaque for r in rig.written(conn)] == [request.opaque]
    assert rig.written(waiting) == [] and rig.service.held_count == 1
    assert rig.heard[-1][2] is None  # not counted as an arrival's wake-up
    assert rig.service.recheck() == 0


async def test_a_woken_pull_whose_timer_fires_first_is_answered_once() -> None:
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append)
    rig.service.start()
    conns = [rig.hold(offset=0, suspend_ms=100)[2] for _ in range(2)]
    rig.arrive(TAG_A)
    rig.timers.advance(0.2)  # their deadlines pass before their turn comes
    turns.pop(0)()
    assert len(rig.answered) == 2 and all(len(rig.written(conn)) == 1 for conn in conns)
    assert rig.service.held_count == 0


# ---------------------------------------------------------------------- parked pops


async def test_one_arrival_wakes_a_held_pull_and_a_parked_pop(rig: Rig) -> None:
    """Pops park in the same table as pulls: one arrival wakes the pulls of its queue and the
    pops of its topic alike, each once."""
    _, request, conn = rig.hold(offset=0)
    parked = rig.park()
    assert rig.service.held_count == 2 and rig.timers.pending == 2
    rig.arrive(TAG_A)
    assert [r.opaque for r in rig.written(conn)] == [request.opaque]
    assert parked.event.is_set()
    assert rig.service.held_count == 0 and rig.timers.pending == 0
    assert (rig.service.woken, rig.service.pops_woken) == (1, 1)


async def test_a_parked_pop_is_woken_by_any_queue_of_its_topic_its_tags_pass(rig: Rig) -> None:
    every, tagged = rig.park(), rig.park(codes=frozenset({TAG_B}))
    _, _, pull = rig.hold(queue=0)
    rig.arrive(TAG_A, queue=1)  # a pop has no queue of its own; a pull has
    assert every.event.is_set() and not tagged.event.is_set() and rig.written(pull) == []
    rig.arrive(TAG_B, queue=2)
    assert tagged.event.is_set() and rig.service.held_count == 1


async def test_a_message_stored_between_an_empty_pop_and_its_parking_wakes_it(rig: Rig) -> None:
    """The lost wake-up, for a pop: it noted its queues' ends, popped nothing, then a message
    landed (its arrival found nobody parked), then it parked — the re-check after parking sees
    the queue past the end it read and wakes it at once."""
    ends = {0: 0, 1: 0}  # noted before the empty pop
    rig.arrive(TAG_A, queue=1)  # lands before the parking: the listener wakes nobody
    parked = rig.park(ends=ends)
    assert parked.event.is_set()
    assert rig.service.held_count == 0 and rig.timers.pending == 0
    assert rig.service.pops_woken == 0  # the re-check woke it, not an arrival
    # A pop that read to the current ends stays parked.
    still = rig.park(ends={0: 0, 1: 1})
    assert not still.event.is_set() and rig.service.held_count == 1


async def test_shutdown_wakes_parked_pops_as_it_answers_held_pulls() -> None:
    turns: list[Callable[[], object]] = []
    rig = make_rig(defer=turns.append)
    rig.service.start()
    _, _, conn = rig.hold(queue=1)
    woken = [rig.park(), rig.park()]  # woken by the arrival, their turn not yet come
    rig.arrive(TAG_A)
    waiting = rig.park(codes=frozenset({TAG_B}))
    assert not any(parked.event.is_set() for parked in [*woken, waiting])
    assert rig.service.answer_all() == 4
    assert len(rig.written(conn)) == 1
    assert all(parked.event.is_set() for parked in [*woken, waiting])
    assert rig.service.held_count == 0 and rig.timers.pending == 0
    # From now on a pop answers at once: nothing parks.
    assert rig.service.park(TOPIC, MessageFilter(), {0: 0}, 1.0) is None


async def test_the_held_count_includes_parked_pops() -> None:
    rig = make_rig(max_held=2)
    rig.service.start()
    rig.hold()
    rig.hold(queue=1)
    rig.park()
    rig.park(codes=frozenset({TAG_A, TAG_B}))  # counted once, though under two codes
    service = rig.service
    assert (service.held_pulls, service.held_pops, service.held_count) == (2, 2, 4)
    assert service.parked_pops(TOPIC) == 2 and service.parked_pops("other") == 0
    assert service.full and rig.park()  # max_held bounds the pulls alone
    assert service.held_count == 5
    service.answer_all()


async def test_the_hold_families_count_pulls_and_pops_by_kind(rig: Rig) -> None:
    rig.hold()
    rig.park(wait_s=0.1)
    rig.park()
    rig.timers.advance(0.1)
    rig.arrive(TAG_A)
    rig.park()
    figures = {
        (family.name, sample.labels["kind"]): sample.value
        for family in hold_families(rig.service)
        for sample in family.samples
    }
    assert figures == {
        ("longboat_held_pulls", "pull"): 0,
        ("longboat_held_pulls", "pop"): 1,
        ("longboat_pull_wakeups", "pull"): 1,
        ("longboat_pull_wakeups", "pop"): 1,
        ("longboat_pull_hold_timeouts", "pull"): 0,
        ("longboat_pull_hold_timeouts", "pop"): 1,
    }


async def test_a_parked_pop_s_timer_wakes_it_once(rig: Rig) -> None:
    parked = rig.park(wait_s=0.5)
    rig.timers.advance(0.499)
    assert not parked.event.is_set()
    rig.timers.advance(0.001)
    assert parked.event.is_set() and rig.service.pops_expired == 1
    assert rig.service.held_count == 0
    rig.arrive(TAG_A)  # too late: nobody is parked any more
    assert rig.service.pops_woken == 0


async def test_wake_pops_wakes_the_topic_s_pops_and_no_pull(rig: Rig) -> None:
    """What no arrival reports (a message visible again, an ack) wakes the pops only."""
    _, _, conn = rig.hold()
    parked = rig.park(codes=frozenset({TAG_A}))
    rig.service.wake_pops("other")
    assert not parked.event.is_set()
    rig.service.wake_pops(TOPIC)
    assert parked.event.is_set() and rig.written(conn) == []
    assert (rig.service.held_pulls, rig.service.held_pops) == (1, 0)


async def test_a_pop_whose_caller_leaves_is_dropped_unanswered(rig: Rig) -> None:
    parked = rig.park()
    rig.service.leave(parked)
    assert rig.service.held_count == 0 and rig.timers.pending == 0
    rig.arrive(TAG_A)
    rig.service.answer_all()
    assert not parked.event.is_set()


async def test_the_recheck_wakes_a_pop_whose_topic_moved_unheard(rig: Rig) -> None:
    moved = rig.park(ends={0: 0, 1: 0})
    other = rig.service.park("other", MessageFilter(), {0: 0}, 30.0)
    rig.max_offsets[(TOPIC, 1)] = 1  # stored; on_arrival never called
    assert rig.service.recheck() == 1
    assert moved.event.is_set() and other is not None and not other.event.is_set()
    assert rig.service.recheck() == 0
