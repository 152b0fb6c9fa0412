"""The delay-level service over a real store (no network): delivery when due, in order, with
DELAY removed, progress that survives a restart, and nothing delivered early."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from longboat.broker.delay_levels import SCHEDULE_TOPIC, DelayLevels, reroute_delayed
from longboat.broker.services.delay_schedule import Phase, ScheduleService
from longboat.protocol.message import decode_record
from longboat.protocol.properties import Prop
from longboat.store import MessageInner, MessageStore, PutResult, StoreConfig

LADDER = DelayLevels.parse("100ms 300ms 1500ms")


def _config(root: Path) -> StoreConfig:
    return StoreConfig(
        root_dir=root,
        commit_log_segment_size=256 * 1024,
        index_hash_slots=1024,
        index_max_entries=4096,
    )


class Harness:
    """A store, the service over it, and an event per real-topic arrival."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.store = MessageStore(_config(root), tags_code_resolver=LADDER.tags_code_of)
        self.arrived = asyncio.Event()
        self.store.add_arrival_listener(self._on_arrival)
        self.service = ScheduleService(
            self.store, LADDER, self.put, root / "config" / "delayOffset.json"
        )
        self.store.add_arrival_listener(self.service.on_arrival)

    def _on_arrival(self, topic: str, *_: object) -> None:
        if topic != SCHEDULE_TOPIC:
            self.arrived.set()

    async def put(self, msg: MessageInner) -> PutResult:
        reroute_delayed(msg, LADDER, int(time.time() * 1000))
        return self.store.put_message(msg)

    async def start(self) -> None:
        self.store.open()
        self.service.start()

    async def stop(self) -> None:
        await self.service.stop()
        self.store.close()

    async def wait_for(self, topic: str, queue_id: int, count: int) -> None:
        async with asyncio.timeout(20):
            while self.store.max_offset(topic, queue_id) < count:
                self.arrived.clear()
                await self.arrived.wait()


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    h = Harness(tmp_path / "store")
    await h.start()
    yield h
    await h.stop()


def delayed(topic: str, body: bytes, level: int, queue_id: int = 0) -> MessageInner:
    return MessageInner(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties={Prop.DELAY: str(level), Prop.TAGS: "t", Prop.KEYS: body.decode()},
    )


def read_all(store: MessageStore, topic: str, queue_id: int) -> list:
    got = store.get_messages(topic, queue_id, 0, 32)
    return [decode_record(r) for r in got.records]


async def test_delayed_messages_arrive_in_order_after_their_delay(harness: Harness) -> None:
    sent = []
    for i in range(5):
        result = await harness.put(delayed("T", f"m{i}".encode(), level=1, queue_id=3))
        assert result.ok
        stored = harness.store.read_message(result.records[0].commit_log_offset)
        assert stored is not None
        sent.append(stored)
    assert harness.store.max_offset("T", 3) == 0
    await harness.wait_for("T", 3, 5)
    got = read_all(harness.store, "T", 3)
    assert [m.body for m in got] == [f"m{i}".encode() for i in range(5)]
    for original, m in zip(sent, got, strict=True):
        assert m.store_timestamp >= original.store_timestamp + 100  # never early
        assert Prop.DELAY not in m.properties
        assert m.properties[Prop.REAL_TOPIC] == "T"
        assert m.properties[Prop.REAL_QID] == "3"
        assert m.properties[Prop.TAGS] == "t"
    assert harness.service.pending()[1] == 0
    assert harness.service.offsets()[1] == 5


async def test_levels_run_independently(harness: Harness) -> None:
    await harness.put(delayed("T", b"slow", level=2))
    await harness.put(delayed("T", b"fast", level=1))
    await harness.wait_for("T", 0, 2)
    assert [m.body for m in read_all(harness.store, "T", 0)] == [b"fast", b"slow"]


async def test_levels_beyond_the_ladder_use_its_last_delay(harness: Harness) -> None:
    msg = delayed("T", b"x", level=40)
    await harness.put(msg)
    assert msg.queue_id == 2 and msg.properties[Prop.DELAY] == "3"


async def test_idle_levels_hold_no_timer(harness: Harness) -> None:
    await harness.put(delayed("T", b"x", level=1))
    await harness.wait_for("T", 0, 1)
    await asyncio.sleep(0)  # let the delivery task settle
    states = harness.service._levels.values()
    assert all(s.phase is Phase.IDLE and s.timer is None for s in states)


async def test_pending_delayed_messages_survive_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "store"
    first = Harness(root)
    await first.start()
    await first.put(delayed("T", b"early", level=1))
    await first.wait_for("T", 0, 1)
    await first.put(delayed("T", b"late", level=3))  # 1.5 s: still pending at the stop
    await first.stop()
    progress = (root / "config" / "delayOffset.json").read_bytes()
    assert b'"1": 1' in progress

    second = Harness(root)
    await second.start()
    try:
        assert second.service.offsets()[1] == 1  # the early one is not delivered again
        assert second.service.pending()[3] == 1
        await second.wait_for("T", 0, 2)
        assert [m.body for m in read_all(second.store, "T", 0)] == [b"early", b"late"]
    finally:
        await second.stop()


async def test_a_message_due_during_downtime_is_delivered_at_start(tmp_path: Path) -> None:
    root = tmp_path / "store"
    first = Harness(root)
    await first.start()
    await first.service.stop()  # the service is down, the store still takes messages
    await first.put(delayed("T", b"x", level=1))
    await asyncio.sleep(0.15)
    first.store.close()
    second = Harness(root)
    await second.start()
    try:
        await second.wait_for("T", 0, 1)
    finally:
        await second.stop()
