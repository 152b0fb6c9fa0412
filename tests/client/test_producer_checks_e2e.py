"""What the producer checks before sending, and what a send reports, against the real broker."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest

from longboat.client import ClientUsageError, Message
from longboat.client.admin import Admin
from longboat.client.message import delay_level_for, delay_property
from longboat.client.producer import Producer
from longboat.protocol.delay_ladder import DEFAULT_DELAYS_MS

from .client_e2e import config_for, read_topic, unique


async def new_topic(namesrv: str) -> str:
    topic = unique("Checks")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=1)
    return topic


def test_delay_levels_outside_the_ladder_are_refused() -> None:
    with pytest.raises(ClientUsageError, match="not a delay level"):
        Message("T", b"x", delay_level=99)
    with pytest.raises(ClientUsageError, match="not a delay level"):
        Message("T", b"x", delay_level=-1)
    msg = Message("T", b"x", delay_level=3)
    msg.delay_level = 19  # set after building: refused when it would go on the wire
    with pytest.raises(ClientUsageError, match="not a delay level"):
        msg.wire_properties()


# A duration and the default level it is sent with: the shortest at least as long.
DELAY_ROUNDING = [
    (timedelta(0), 0),
    (timedelta(milliseconds=1), 1),  # 1 s
    (timedelta(seconds=1), 1),  # exact: 1 s
    (timedelta(seconds=3), 2),  # 5 s
    (timedelta(seconds=10), 3),  # exact: 10 s
    (timedelta(seconds=10, milliseconds=1), 4),  # 30 s
    (timedelta(seconds=45), 5),  # 1 m
    (timedelta(seconds=50), 5),  # 1 m
    (timedelta(minutes=10, seconds=1), 15),  # 20 m
    (timedelta(minutes=90), 18),  # 2 h
    (timedelta(hours=2), 18),  # exact: 2 h, the longest
]


@pytest.mark.parametrize(("delay", "level"), DELAY_ROUNDING)
def test_a_delay_rounds_up_to_a_level(delay: timedelta, level: int) -> None:
    assert delay_level_for(delay) == level
    if level:
        assert delay_property(delay, timers=False) == ("DELAY", str(level))
        assert DEFAULT_DELAYS_MS[level - 1] >= delay.total_seconds() * 1000
    if level > 1:  # the level below would deliver early
        assert DEFAULT_DELAYS_MS[level - 2] < delay.total_seconds() * 1000


def test_a_delay_no_level_covers_is_refused() -> None:
    for long in (timedelta(hours=2, milliseconds=1), timedelta(hours=3)):
        Message("T", b"x", delay=long)  # a broker with timers takes it
        with pytest.raises(ClientUsageError, match="no delay level is at least"):
            delay_property(long, timers=False)
        ms = int(long.total_seconds() * 1000)
        assert delay_property(long, timers=True) == ("TIMER_DELAY_MS", str(ms))
    with pytest.raises(ClientUsageError, match="cannot be negative"):
        Message("T", b"x", delay=timedelta(seconds=-1))
    with pytest.raises(ClientUsageError, match="not both"):
        Message("T", b"x", delay_level=2, delay=timedelta(seconds=5))


async def test_a_three_second_delay_does_not_arrive_before_three_seconds(namesrv: str) -> None:
    topic = await new_topic(namesrv)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        sent_at = time.monotonic()
        await producer.send(Message(topic, b"later", delay=timedelta(seconds=3)))
        await producer.send(Message(topic, b"now"))
    # Waits until both arrived (the positive signal), then looks at when the delayed one did.
    stored = {m.body: m for m in await read_topic(namesrv, topic, 2, timeout=60.0)}
    arrived_after = time.monotonic() - sent_at
    assert set(stored) == {b"now", b"later"}
    later = stored[b"later"]
    assert later.store_timestamp - later.born_timestamp >= 3000
    assert later.properties["TIMER_DELAY_MS"] == "3000"  # an exact timer, not a level
    assert arrived_after >= 3.0


async def test_the_size_limit_is_on_the_wire_body(namesrv: str) -> None:
    topic = await new_topic(namesrv)
    zeros = bytes(5 * 1024 * 1024)  # over 4 MiB, compresses to a few KB
    incompressible = os.urandom(4 * 1024 * 1024 - 1024)  # grows under zlib: sent as it is
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        assert (await producer.send(Message(topic, zeros))).ok
        assert (await producer.send(Message(topic, incompressible))).ok
    stored = await read_topic(namesrv, topic, 2)
    assert sorted(m.body for m in stored) == sorted([zeros, incompressible])


async def test_a_batch_result_lists_each_message_id(namesrv: str) -> None:
    topic = await new_topic(namesrv)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        result = await producer.send_batch([Message(topic, f"b{i}".encode()) for i in range(3)])
        single = await producer.send(Message(topic, b"one"))
    assert len(result.msg_ids) == 3 and len(result.offset_msg_ids) == 3
    assert single.msg_ids == [single.msg_id]
    stored = await read_topic(namesrv, topic, 4)
    by_body = {m.body: m for m in stored}
    assert [by_body[f"b{i}".encode()].msg_id for i in range(3)] == result.msg_ids
