"""What the producer checks before sending, and what a send reports, against the real broker."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from longboat.client import ClientUsageError, Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer

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


def test_a_delay_maps_to_the_nearest_level() -> None:
    assert Message("T", b"x", delay=timedelta(seconds=10)).delay_level == 3
    assert Message("T", b"x", delay=timedelta(seconds=50)).delay_level == 5  # 1 m
    assert Message("T", b"x", delay=timedelta(seconds=45)).delay_level == 4  # tie: 30 s
    assert Message("T", b"x", delay=timedelta(hours=2)).delay_level == 18
    assert Message("T", b"x", delay=timedelta(0)).delay_level == 0
    for bad in (timedelta(hours=3), timedelta(seconds=-1)):
        with pytest.raises(ClientUsageError, match="no delay level matches"):
            Message("T", b"x", delay=bad)
    with pytest.raises(ClientUsageError, match="not both"):
        Message("T", b"x", delay_level=2, delay=timedelta(seconds=5))


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
