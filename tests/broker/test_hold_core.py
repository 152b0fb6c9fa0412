"""Long polling over the wire: the hold service answers a parked pull the moment a matching
message lands, never for a non-matching tag, at its own timeout otherwise, and forgets pulls
whose connection went away.  Real name server + broker on loopback, bare protocol client."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable

import pytest

from conftest import Cluster
from longboat.broker.core.message_filter import MessageFilter
from longboat.broker.core.pull import PullRequest
from longboat.broker.state.hold import RECHECK_INTERVAL_S
from longboat.protocol import RemotingCommand, ResponseCode
from longboat.protocol.properties import Prop
from longboat.remoting import Connection
from longboat.store import MessageInner

from .wire import Wire, eventually, pulled, records, sent

TOPIC = "HoldTopic"
LONG_MS = 30_000  # a hold that only a wake-up can end within the test


@pytest.fixture
async def wire(loopback_cluster: Callable[..., Cluster]) -> Wire:
    return Wire(loopback_cluster().broker_addr)


async def created(w: Wire, topic: str = TOPIC, queues: int = 4) -> None:
    """Create `topic` with `queues` queues through auto-creation (one message per queue)."""
    for q in range(queues):
        sent(await w.send(topic, b"seed", tags="Seed", queue_id=q))


async def test_held_pull_is_woken_by_a_matching_send_not_by_another_tag(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    consumer, producer = Wire(cluster.broker_addr), Wire(cluster.broker_addr)
    await created(producer, queues=1)
    pull = asyncio.ensure_future(
        consumer.pull(TOPIC, 0, 1, subscription="TagA || TagC", suspend_ms=LONG_MS)
    )
    await eventually(lambda: cluster.broker.hold.held_count == 1, "the pull to be held")

    sent(await producer.send(TOPIC, b"not for you", tags="TagB"))
    # The arrival listener ran in-line with the append, before the send was answered: had
    # TagB woken the pull, its answer would be on its way now.  One more round trip to be sure.
    sent(await producer.send(TOPIC, b"nor this", tags="TagB"))
    assert not pull.done()
    assert cluster.broker.hold.held_count == 1

    sent(await producer.send(TOPIC, b"for you", tags="TagC"))
    response = await asyncio.wait_for(pull, 5)
    assert response.code == ResponseCode.SUCCESS
    got = records(response)
    assert [(m.body, m.tags, m.queue_offset) for m in got] == [(b"for you", "TagC", 3)]
    assert pulled(response).nextBeginOffset == 4
    assert cluster.broker.hold.held_count == 0
    await consumer.close()
    await producer.close()


async def test_an_arrival_wakes_exactly_the_pulls_whose_filter_it_passes(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await created(w, queues=1)
    filters = ["TagA", "TagB", "TagA || TagB", "*", "TagC"] * 20
    pulls = [
        asyncio.ensure_future(w.pull(TOPIC, 0, 1, subscription=f, suspend_ms=LONG_MS))
        for f in filters
    ]
    await eventually(lambda: cluster.broker.hold.held_count == 100, "100 held pulls")

    # A batch whose only tag is TagB, then a TagC message in the middle of a batch.
    sent(await w.send_batch(TOPIC, [b"b1", b"b2"], tags="TagB"))
    await eventually(lambda: cluster.broker.hold.held_count == 40, "the TagB and * pulls")
    # Released at once, answered just after the send (off its path): wait for the answers.
    await eventually(lambda: sum(p.done() for p in pulls) == 60, "their answers")
    woken = {f for f, p in zip(filters, pulls, strict=True) if p.done()}
    assert woken == {"TagB", "TagA || TagB", "*"}
    for p in pulls:
        if p.done():
            assert [m.body for m in records(p.result())] == [b"b1", b"b2"]

    sent(await w.send(TOPIC, b"c", tags="TagC"))
    await eventually(lambda: cluster.broker.hold.held_count == 20, "the TagC pulls")
    await eventually(
        lambda: all(p.done() for f, p in zip(filters, pulls, strict=True) if f != "TagA"),
        "the TagC answers",
    )
    sent(await w.send(TOPIC, b"a", tags="TagA"))
    answers = await asyncio.wait_for(asyncio.gather(*pulls), 10)
    assert all(a.code == ResponseCode.SUCCESS for a in answers)
    await w.close()


async def test_held_pull_times_out_with_pull_not_found_at_its_own_timeout(wire: Wire) -> None:
    await created(wire, queues=1)
    started = time.monotonic()
    response = await wire.pull(TOPIC, 0, 1, suspend_ms=300)
    waited = time.monotonic() - started
    assert response.code == ResponseCode.PULL_NOT_FOUND
    header = pulled(response)
    assert (header.nextBeginOffset, header.minOffset, header.maxOffset) == (1, 0, 1)
    assert waited >= 0.3  # held for its suspendTimeoutMillis, not answered at once
    assert records(response) == []
    # Without the suspend flag the same pull is answered at once.
    response = await wire.pull(TOPIC, 0, 1, suspend_ms=0, timeout=5)
    assert response.code == ResponseCode.PULL_NOT_FOUND
    await wire.close()


async def test_send_landing_during_hold_registration_wakes_the_pull(
    loopback_cluster: Callable[..., Cluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lost wake-up race, made deterministic: the message is stored after the pull's empty
    read and before its registration, so the arrival listener finds nobody to wake; only the
    re-check after registering can answer it.  (The hold service's own `hold` is wrapped for
    this one broker: the race needs a step between the two, which production code never has.)"""
    cluster = loopback_cluster()
    broker = cluster.broker
    w = Wire(cluster.broker_addr)
    await created(w, queues=1)
    raced: list[int] = []
    register = broker.hold.hold

    def land_a_message_then_register(
        conn: Connection, command: RemotingCommand, pull: PullRequest, flt: MessageFilter
    ) -> bool:
        monkeypatch.setattr(broker.hold, "hold", register)
        message = MessageInner(pull.topic, pull.queue_id, b"raced", {Prop.TAGS: "TagA"})
        raced.append(broker.appender.store_message(message).records[0].queue_offset)
        return register(conn, command, pull, flt)

    monkeypatch.setattr(broker.hold, "hold", land_a_message_then_register)
    response = await w.pull(TOPIC, 0, 1, subscription="TagA", suspend_ms=LONG_MS, timeout=10)
    assert raced == [1]
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in records(response)] == [b"raced"]
    assert broker.hold.held_count == 0
    await w.close()


async def test_ten_thousand_held_pulls_are_all_woken_or_timed_out(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """4 connections x 2,500 pipelined pulls over 8 queues: the pulls of queues 0-3 are woken
    by one send each, those of queues 4-7 time out with PULL_NOT_FOUND."""
    cluster = loopback_cluster()
    wires = [Wire(cluster.broker_addr) for _ in range(4)]
    producer = Wire(cluster.broker_addr)
    await created(producer, queues=8)
    per_conn, woken_queues = 2_500, range(4)

    def pull(w: Wire, i: int) -> asyncio.Future[object]:
        q = i % 8
        # Long enough that every pull is parked before the first one times out, even on a busy
        # machine (all 10,000 must be held at once).
        suspend = LONG_MS if q in woken_queues else 10_000
        return asyncio.ensure_future(w.pull(TOPIC, q, 1, suspend_ms=suspend, timeout=60))

    pulls = [(i % 8, pull(w, i)) for w in wires for i in range(per_conn)]
    await eventually(
        lambda: cluster.broker.hold.held_count == 10_000, "10,000 held pulls", timeout=60
    )
    for q in woken_queues:
        sent(await producer.send(TOPIC, f"wake {q}".encode(), queue_id=q))
    answers = await asyncio.wait_for(asyncio.gather(*(f for _, f in pulls)), 60)

    outcomes: Counter[tuple[int, int]] = Counter()
    for (q, _), response in zip(pulls, answers, strict=True):
        outcomes[(q, response.code)] += 1  # type: ignore[attr-defined]
        if response.code == ResponseCode.SUCCESS:  # type: ignore[attr-defined]
            assert [m.body for m in records(response)] == [f"wake {q}".encode()]  # type: ignore[arg-type]
    per_queue = Counter(q for q, _ in pulls)
    assert outcomes == {
        (q, ResponseCode.SUCCESS if q in woken_queues else ResponseCode.PULL_NOT_FOUND): n
        for q, n in per_queue.items()
    }
    assert cluster.broker.hold.held_count == 0
    for w in (*wires, producer):
        await w.close()


async def test_short_polling_holds_for_short_polling_time_then_answers(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(long_polling_enable=False, short_polling_time_mills=300)
    consumer, producer = Wire(cluster.broker_addr), Wire(cluster.broker_addr)
    await created(producer, queues=1)

    # Nothing arrives: held shortPollingTimeMills (not the 30 s the client allows), then empty.
    started = time.monotonic()
    response = await consumer.pull(TOPIC, 0, 1, suspend_ms=LONG_MS, timeout=10)
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert time.monotonic() - started >= 0.3

    # An arrival does not wake a short-polled pull; its re-run at the end finds the message.
    pull = asyncio.ensure_future(consumer.pull(TOPIC, 0, 1, suspend_ms=LONG_MS, timeout=10))
    await eventually(lambda: cluster.broker.hold.held_count == 1, "the pull to be held")
    sent(await producer.send(TOPIC, b"found at the re-run"))
    assert not pull.done()
    response = await pull
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in records(response)] == [b"found at the re-run"]

    # The client's own suspend timeout still bounds the hold when it is the shorter.
    started = time.monotonic()
    response = await consumer.pull(TOPIC, 0, 2, suspend_ms=100, timeout=10)
    assert response.code == ResponseCode.PULL_NOT_FOUND
    await consumer.close()
    await producer.close()


async def test_held_pulls_of_a_closed_connection_are_dropped(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    hold = cluster.broker.hold
    leaving, staying = Wire(cluster.broker_addr), Wire(cluster.broker_addr)
    await created(staying, queues=2)
    gone = [
        asyncio.ensure_future(leaving.pull(TOPIC, i % 2, 1, suspend_ms=LONG_MS)) for i in range(100)
    ]
    kept = asyncio.ensure_future(staying.pull(TOPIC, 0, 1, suspend_ms=LONG_MS))
    await eventually(lambda: hold.held_count == 101, "101 held pulls")
    await leaving.close()
    await eventually(lambda: hold.held_count == 1, "the closed connection's pulls to go")
    await asyncio.gather(*gone, return_exceptions=True)

    # The other connection's pull is still held and still wakes.
    sent(await staying.send(TOPIC, b"still here", queue_id=0))
    response = await asyncio.wait_for(kept, 5)
    assert [m.body for m in records(response)] == [b"still here"]
    assert hold.held_count == 0
    await staying.close()


async def test_pulls_beyond_the_hold_limit_are_refused_busy(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """maxHeldPullRequests bounds the memory parked pulls can take: the pull over the limit is
    answered SYSTEM_BUSY at once, which clients back off from (a PULL_NOT_FOUND would come
    straight back: a hot loop), instead of queued."""
    cluster = loopback_cluster(max_held_pull_requests=10)
    w = Wire(cluster.broker_addr)
    await created(w, queues=1)
    held = [asyncio.ensure_future(w.pull(TOPIC, 0, 1, suspend_ms=LONG_MS)) for _ in range(10)]
    await eventually(lambda: cluster.broker.hold.held_count == 10, "10 held pulls")
    response = await w.pull(TOPIC, 0, 1, suspend_ms=LONG_MS, timeout=5)
    assert response.code == ResponseCode.SYSTEM_BUSY
    assert "maxHeldPullRequests" in (response.remark or "")
    assert not any(f.done() for f in held)
    sent(await w.send(TOPIC, b"wakes the ten"))
    answers = await asyncio.wait_for(asyncio.gather(*held), 10)
    assert {a.code for a in answers} == {ResponseCode.SUCCESS}
    await w.close()


async def test_a_delayed_message_wakes_a_held_pull_when_it_is_due(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """DELAY on send: stored in the schedule topic first, delivered to the real queue when due
    (delay level 1 shortened to 300 ms), where it wakes the parked pull."""
    cluster = loopback_cluster(message_delay_level="300ms 1s")
    w = Wire(cluster.broker_addr)
    await created(w, queues=1)
    pull = asyncio.ensure_future(w.pull(TOPIC, 0, 1, suspend_ms=LONG_MS, timeout=10))
    await eventually(lambda: cluster.broker.hold.held_count == 1, "the pull to be held")
    started = time.monotonic()
    sent(await w.send(TOPIC, b"later", tags="TagA", props={Prop.DELAY: "1"}))
    response = await pull
    assert time.monotonic() - started >= 0.3
    [msg] = records(response)
    assert (msg.body, msg.tags, msg.topic, msg.queue_offset) == (b"later", "TagA", TOPIC, 1)
    await w.close()


async def test_graceful_stop_answers_held_pulls_and_unregisters(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await created(w, queues=1)
    pull = asyncio.ensure_future(w.pull(TOPIC, 0, 1, suspend_ms=LONG_MS))
    await eventually(lambda: cluster.broker.hold.held_count == 1, "the pull to be held")
    await asyncio.to_thread(cluster.runner.run, cluster.broker.stop())
    response = await asyncio.wait_for(pull, 5)
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert pulled(response).nextBeginOffset == 1
    assert cluster.namesrv.routes.route(TOPIC) is None
    await w.close()


async def test_a_lost_wake_up_is_recovered_by_the_periodic_recheck(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """The arrival listener is taken away (a wake-up lost on purpose): the held pull is still
    answered by the re-check within its interval, long before its own 30 s deadline."""
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await created(w, queues=1)
    store = cluster.broker.store
    arrivals = store._arrivals
    arrivals.listeners = [f for f in arrivals.listeners if f != cluster.broker.hold.on_arrival]
    pull = asyncio.ensure_future(w.pull(TOPIC, 0, 1, suspend_ms=LONG_MS, timeout=LONG_MS))
    await eventually(lambda: cluster.broker.hold.held_count == 1, "the pull to be held")
    started = time.monotonic()
    sent(await w.send(TOPIC, b"nobody told the hold service", tags="TagA"))
    response = await asyncio.wait_for(pull, RECHECK_INTERVAL_S * 3)
    assert [m.body for m in records(response)] == [b"nobody told the hold service"]
    assert time.monotonic() - started <= RECHECK_INTERVAL_S * 3
    await w.close()
