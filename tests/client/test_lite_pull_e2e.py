"""The lite pull consumer against the real broker: assign, seek, commit, restart, subscribe."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.client.sync import LitePullConsumer as BlockingLitePull
from longboat.protocol.message import MessageExt

from .client_e2e import config_for, unique


async def poll_n(consumer: LitePullConsumer, n: int, timeout: float = 15.0) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += await consumer.poll(timeout=0.5)
    return got


async def produce(namesrv: str, topic: str, bodies: list[bytes], queue_id: int = 0) -> None:
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for body in bodies:
            await producer.send(Message(topic, body), selector=lambda qs, m, a: qs[queue_id])


async def new_topic(namesrv: str, queues: int = 2) -> str:
    topic = unique("LP")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=queues)
    return topic


def lite(namesrv: str, group: str, **options) -> LitePullConsumer:
    options.setdefault("consume_from", ConsumeFrom.FIRST_OFFSET)
    return LitePullConsumer(group, config=config_for(namesrv), **options)


async def test_assign_commit_and_restart_resumes_from_commit(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=1)
    await produce(namesrv, topic, [f"m{i}".encode() for i in range(30)])
    group = unique("g")
    async with lite(namesrv, group, auto_commit=False, pull_batch_size=8) as consumer:
        [mq] = await consumer.fetch_message_queues(topic)
        consumer.assign([mq])
        first = await poll_n(consumer, 12)
        assert [m.body for m in first[:12]] == [f"m{i}".encode() for i in range(12)]
        # Commit exactly what was processed: the first 12.
        await consumer.commit({mq: 12})
        assert await consumer.committed(mq) == 12
    # A new instance (new client id) of the group resumes after the commit, not before.
    async with lite(namesrv, group, auto_commit=False) as again:
        again.assign([mq])
        rest = await poll_n(again, 18)
        assert [m.body for m in rest] == [f"m{i}".encode() for i in range(12, 30)]
        # Nothing more, and no duplicates: a message sent now is the next one.
        await produce(namesrv, topic, [b"marker"])
        assert [m.body for m in await poll_n(again, 1)] == [b"marker"]


async def test_auto_commit_on_shutdown(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=1)
    await produce(namesrv, topic, [b"a", b"b", b"c"])
    group = unique("g")
    async with lite(namesrv, group) as consumer:
        [mq] = await consumer.fetch_message_queues(topic)
        consumer.assign([mq])
        assert len(await poll_n(consumer, 3)) == 3
    async with lite(namesrv, group) as again:
        again.assign([mq])
        assert await again.committed(mq) == 3
        await produce(namesrv, topic, [b"marker"])  # the next one: nothing before it again
        assert [m.body for m in await poll_n(again, 1)] == [b"marker"]


async def test_seek_to_offset_begin_end_and_timestamp(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=1)
    await produce(namesrv, topic, [f"old{i}".encode() for i in range(10)])
    await asyncio.sleep(0.05)
    boundary = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    await produce(namesrv, topic, [f"new{i}".encode() for i in range(5)])
    async with lite(namesrv, unique("g"), auto_commit=False) as consumer:
        [mq] = await consumer.fetch_message_queues(topic)
        consumer.assign([mq])
        assert len(await poll_n(consumer, 15)) == 15
        await consumer.seek(mq, 7)
        again = await poll_n(consumer, 8)
        assert [m.queue_offset for m in again] == list(range(7, 15))
        await consumer.seek_to_begin(mq)
        assert (await poll_n(consumer, 1))[0].body == b"old0"
        await consumer.seek_to_timestamp(mq, boundary)
        assert (await poll_n(consumer, 1))[0].body == b"new0"
        await consumer.seek_to_end(mq)
        assert await consumer.poll(timeout=0.3) == []
        await produce(namesrv, topic, [b"after-end"])
        assert [m.body for m in await poll_n(consumer, 1)] == [b"after-end"]


async def test_pause_holds_a_queue_until_resume(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=2)
    await produce(namesrv, topic, [b"q0"] * 3, queue_id=0)
    await produce(namesrv, topic, [b"q1"] * 3, queue_id=1)
    async with lite(namesrv, unique("g"), auto_commit=False) as consumer:
        queues = await consumer.fetch_message_queues(topic)
        consumer.assign(queues)
        consumer.pause([queues[0]])
        got = await poll_n(consumer, 3)
        assert [m.body for m in got] == [b"q1"] * 3
        # A message sent to the other queue now comes alone: the paused one gives nothing.
        await produce(namesrv, topic, [b"q1-marker"], queue_id=1)
        assert [m.body for m in await poll_n(consumer, 1)] == [b"q1-marker"]
        consumer.resume([queues[0]])
        assert [m.body for m in await poll_n(consumer, 3)] == [b"q0"] * 3


async def test_subscribe_splits_queues_between_members(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=4)
    group = unique("g")
    a = lite(namesrv, group, rebalance_interval=1.0)
    b = lite(namesrv, group, rebalance_interval=1.0)
    a.subscribe(topic)
    b.subscribe(topic)
    await a.start()
    await b.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            sa, sb = a.assignment(), b.assignment()
            if len(sa) == 2 and len(sb) == 2 and not sa & sb:
                break
            await asyncio.sleep(0.1)
        assert len(a.assignment()) == 2 and len(b.assignment()) == 2
        assert not a.assignment() & b.assignment()
        bodies = [f"s{i}".encode() for i in range(40)]
        async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
            for body in bodies:
                await producer.send(Message(topic, body))
        got: list[MessageExt] = []
        deadline = time.monotonic() + 15
        while len(got) < 40 and time.monotonic() < deadline:
            got += await a.poll(timeout=0.2)
            got += await b.poll(timeout=0.2)
        assert sorted(m.body for m in got) == sorted(bodies)
    finally:
        await a.shutdown()
        await b.shutdown()


async def test_buffers_stay_under_the_queue_and_total_thresholds(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=2)
    await produce(namesrv, topic, [b"a"] * 60, queue_id=0)
    await produce(namesrv, topic, [b"b"] * 60, queue_id=1)
    options = {"pull_batch_size": 4, "pull_threshold_for_queue": 10, "pull_threshold_for_all": 14}
    async with lite(namesrv, unique("g"), auto_commit=False, **options) as consumer:
        consumer.assign(await consumer.fetch_message_queues(topic))
        got = await poll_n(consumer, 1)
        await asyncio.sleep(1.0)  # the pull loops fill the buffers as far as they may
        pqs = consumer.process_queues()
        # Per queue: a pull never asks for more than the room left.
        assert all(pq.peak_count <= 10 for pq in pqs.values())
        # All queues: once over the total, no new pull starts (one in flight per queue may land).
        assert 10 <= sum(pq.count for pq in pqs.values()) <= 14 + 2 * 4
        got += await poll_n(consumer, 119)
        assert sorted(m.body for m in got) == [b"a"] * 60 + [b"b"] * 60


async def two_queues_of_messages(namesrv: str) -> tuple[str, list[bytes]]:
    """A new topic of two queues holding m0..m39, the even ones in queue 0, the odd in 1."""
    topic = await new_topic(namesrv, queues=2)
    bodies = [f"m{i}".encode() for i in range(40)]
    for q in (0, 1):
        await produce(namesrv, topic, bodies[q::2], queue_id=q)
    return topic, bodies


async def poll_both(a: LitePullConsumer, b: LitePullConsumer, count: int) -> list[MessageExt]:
    """What two members poll, in turn, until `count` messages came (or 20 s passed)."""
    got: list[MessageExt] = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        got += await a.poll(timeout=0.2)
        got += await b.poll(timeout=0.2)
    return got


async def test_queue_moved_by_a_rebalance_continues_after_what_was_polled(namesrv: str) -> None:
    topic, bodies = await two_queues_of_messages(namesrv)
    group = unique("g")
    a = lite(namesrv, group, rebalance_interval=1.0, pull_batch_size=5)
    a.subscribe(topic)
    await a.start()
    b = lite(namesrv, group, rebalance_interval=1.0, pull_batch_size=5)
    b.subscribe(topic)
    try:
        first = await poll_n(a, 10)
        await b.start()
        got = first + await poll_both(a, b, 40 - len(first))
        assert len(b.assignment()) == 1
        # The queue b took over was committed by a when dropped: nothing polled comes twice.
        assert sorted(m.body for m in got) == sorted(bodies)
    finally:
        await a.shutdown()
        await b.shutdown()


async def test_a_queue_moves_only_after_its_old_owner_committed_and_let_go(
    namesrv: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old owner drops a queue only when it rebalances itself, which may be well after the
    new owner added it (NOTIFY_CONSUMER_IDS_CHANGED is one-way and may come late or never):
    the new owner must not read the queue's offset, nor poll it, before then."""
    topic, bodies = await two_queues_of_messages(namesrv)
    group = unique("g")
    a = lite(namesrv, group, rebalance_interval=60.0, pull_batch_size=5)
    a.subscribe(topic)
    await a.start()
    monkeypatch.setattr(a, "on_consumer_ids_changed", lambda: None)  # a misses b joining
    b = lite(namesrv, group, rebalance_interval=60.0, pull_batch_size=5)
    b.subscribe(topic)
    try:
        got = await poll_n(a, 10)
        await b.start()
        [moved] = b.assignment()
        assert moved in a.assignment()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            got += await a.poll(timeout=0.1)
            assert await b.poll(timeout=0.1) == []  # a still owns the queue
        await a.rebalance()
        assert moved not in a.assignment()
        got += await poll_both(a, b, 40 - len(got))
        assert sorted(m.body for m in got) == sorted(bodies)
    finally:
        await a.shutdown()
        await b.shutdown()


async def test_async_for_until_shutdown_and_getmany(namesrv: str) -> None:
    topic = await new_topic(namesrv, queues=2)
    await produce(namesrv, topic, [f"a{i}".encode() for i in range(6)], queue_id=0)
    await produce(namesrv, topic, [f"b{i}".encode() for i in range(6)], queue_id=1)
    group = unique("g")
    async with lite(namesrv, group, auto_commit=False, pull_batch_size=4) as consumer:
        queues = await consumer.fetch_message_queues(topic)
        consumer.assign(queues)
        got: list[MessageExt] = []
        async for msg in consumer:
            got.append(msg)
            if len(got) == 3:
                break
        # The position follows each message handed out, not the whole batch.
        mq = next(q for q in queues if q.queue_id == got[0].queue_id)
        assert consumer.position(mq) == got[-1].queue_offset + 1
        await consumer.commit()
        more = await consumer.getmany(timeout=5.0)
        assert set(more) <= set(queues) and more
        got += [m for batch in more.values() for m in batch]
        while len(got) < 12:
            got += [m for b in (await consumer.getmany(timeout=5.0)).values() for m in b]
        assert sorted(m.body for m in got) == sorted(
            [f"a{i}".encode() for i in range(6)] + [f"b{i}".encode() for i in range(6)]
        )
        assert await consumer.committed(mq) == got[2].queue_offset + 1

    consumer = lite(namesrv, unique("g"))
    await consumer.start()
    consumer.assign(await consumer.fetch_message_queues(topic))

    async def stop_soon() -> None:
        await asyncio.sleep(1.5)
        await consumer.shutdown()

    stopper = asyncio.create_task(stop_soon())
    seen = [msg async for msg in consumer]  # ends when shut down
    await stopper
    assert len(seen) == 12


def test_blocking_iteration_until_shutdown_from_another_thread(namesrv: str) -> None:
    topic = asyncio.run(new_topic(namesrv, queues=1))
    asyncio.run(produce(namesrv, topic, [f"s{i}".encode() for i in range(5)]))
    consumer = BlockingLitePull(
        unique("g"), config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.start()
    consumer.assign(consumer.fetch_message_queues(topic))
    timer = threading.Timer(2.0, consumer.shutdown)
    timer.start()
    bodies = [m.body for m in consumer]
    timer.join()
    assert bodies == [f"s{i}".encode() for i in range(5)]
