"""The producer against the real name server and broker on loopback."""

from __future__ import annotations

import asyncio
import gc
import random

import pytest

from longboat.client import Message, NoRouteError, SendStatus
from longboat.client.admin import Admin
from longboat.client.producer import Producer, SendCallback
from longboat.protocol.batch import join_batch
from longboat.protocol.sysflags import MessageSysFlag

from .client_e2e import config_for, read_topic, unique


async def make_topic(namesrv: str, queues: int = 8) -> str:
    topic = unique("T")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=queues)
    return topic


async def test_ordered_sends_land_in_the_selected_queue_in_order(namesrv: str) -> None:
    topic = await make_topic(namesrv)
    keys = [f"order-{i}" for i in range(5)]
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        queue_of: dict[str, set[int]] = {k: set() for k in keys}
        for step in range(12):
            for key in keys:
                body = f"{key}:{step}".encode()
                result = await producer.send(Message(topic, body, keys=key), sharding_key=key)
                queue_of[key].add(result.message_queue.queue_id)
    assert all(len(q) == 1 for q in queue_of.values()), "one queue per sharding key"
    got = await read_topic(namesrv, topic, 60)
    assert len(got) == 60
    for key in keys:
        mine = [m for m in got if m.keys == key]
        assert {m.queue_id for m in mine} == queue_of[key]
        mine.sort(key=lambda m: m.queue_offset)
        assert [m.body for m in mine] == [f"{key}:{s}".encode() for s in range(12)]


async def test_async_sends_complete_with_callbacks(namesrv: str) -> None:
    topic = await make_topic(namesrv, queues=4)
    called: list[str] = []

    async def on_done(result, error) -> None:
        assert error is None
        called.append(result.msg_id)

    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        tasks = [
            producer.send_async(Message(topic, f"m{i}".encode()), on_done if i % 2 else None)
            for i in range(40)
        ]
        results = await asyncio.gather(*tasks)
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len(called) == 20 and set(called) <= {r.msg_id for r in results}
    got = await read_topic(namesrv, topic, 40)
    assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(40))
    # The id a send returns is the id consumers see.
    assert {m.msg_id for m in got} == {r.msg_id for r in results}


async def test_batch_send_lands_consecutively_in_one_queue(namesrv: str) -> None:
    topic = await make_topic(namesrv, queues=4)
    msgs = [Message(topic, f"b{i}".encode(), tags="TagB", keys=f"k{i}") for i in range(10)]
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        result = await producer.send_batch(msgs)
        oneway_body = b"fire and forget"
        await producer.send_oneway(Message(topic, oneway_body))
    assert result.status is SendStatus.SEND_OK
    assert len(result.msg_id.split(",")) == 10
    got = await read_topic(namesrv, topic, 11)
    batch = sorted(
        (m for m in got if m.queue_id == result.message_queue.queue_id and m.tags == "TagB"),
        key=lambda m: m.queue_offset,
    )
    assert [m.body for m in batch] == [f"b{i}".encode() for i in range(10)]
    assert [m.queue_offset for m in batch] == list(
        range(result.queue_offset, result.queue_offset + 10)
    )
    assert [m.msg_id for m in batch] == result.msg_id.split(",")
    assert any(m.body == oneway_body for m in got)


async def test_a_batch_encoded_by_the_caller_arrives_as_send_batch_sends_it(
    namesrv: str,
) -> None:
    """`send_encoded_batch` with reserved UNIQ_KEYs: the messages arrive intact, with their
    tags, keys and ids, consecutively in the queue asked for."""
    topic = await make_topic(namesrv, queues=2)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        head, first = producer.reserve_uniq_keys(3)
        ids = [f"{head}{(first + i) & 0xFFFF:04X}" for i in range(3)]
        body = join_batch(
            [
                (f"e{i}".encode(), f"TAGS\x01TagE\x02KEYS\x01k{i}\x02UNIQ_KEY\x01{uid}".encode(), 0)
                for i, uid in enumerate(ids)
            ]
        )
        [queue] = [q for q in await producer.fetch_publish_queues(topic) if q.queue_id == 1]
        result = await producer.send_encoded_batch(topic, body, ",".join(ids), queue=queue)
        # The producer's own ids come after the reserved ones.
        later = await producer.send(Message(topic, b"after"), queue=queue)
    assert result.status is SendStatus.SEND_OK
    assert result.msg_ids == ids
    assert later.msg_id not in ids
    got = sorted(await read_topic(namesrv, topic, 4), key=lambda m: m.queue_offset)
    batch = [m for m in got if m.tags == "TagE"]
    assert [(m.body, m.keys, m.msg_id, m.queue_id) for m in batch] == [
        (f"e{i}".encode(), f"k{i}", ids[i], 1) for i in range(3)
    ]
    assert [m.queue_offset for m in batch] == [result.queue_offset + i for i in range(3)]


async def test_compressed_body_arrives_intact(namesrv: str) -> None:
    topic = await make_topic(namesrv, queues=1)
    rng = random.Random(5)
    body = bytes(rng.choice(b"abcdefgh ") for _ in range(200_000))
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        await producer.send(Message(topic, body))
    [msg] = await read_topic(namesrv, topic, 1)
    assert msg.body == body
    assert msg.sys_flag & MessageSysFlag.COMPRESSED
    assert msg.store_size < len(body) // 2, "stored compressed"


async def test_unknown_topic_without_auto_create_fails_clearly(namesrv_no_autocreate: str) -> None:
    config = config_for(namesrv_no_autocreate)
    async with Producer(unique("pg"), config=config) as producer:
        with pytest.raises(NoRouteError) as info:
            await producer.send(Message("NoSuchTopic_x", b"lost?"))
    text = str(info.value)
    assert "NoSuchTopic_x" in text and "create" in text
    assert info.value.code == 17


async def test_a_topic_a_send_auto_creates_has_as_many_queues_as_topic_create_makes(
    namesrv: str,
) -> None:
    topic = unique("Auto")
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        sent = await producer.send(Message(topic, b"first"))
    assert sent.status is SendStatus.SEND_OK
    async with Admin(config=config_for(namesrv)) as admin:
        status = await admin.topic_status(topic)
        [queues] = {len(status)}
        route = await admin.route(topic)
    # The producer asked for 8, a default broker's TBW102 allows 8: `topic create`'s default.
    assert queues == 8
    assert [(q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [(8, 8)]


async def _reports_once_dropped(
    producer: Producer, msg: Message, callback: SendCallback | None
) -> list[str]:
    """What the loop reports about `producer.send_async(msg, callback)`'s task once it is
    done and nobody holds it any more ("Task exception was never retrieved" for a failure
    nobody was told of)."""
    loop = asyncio.get_running_loop()
    reports: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reports.append(context["message"]))
    try:
        task = producer.send_async(msg, callback)
        await asyncio.wait([task])  # done, without looking at its exception
        await asyncio.sleep(0)  # the task's done callbacks run
        del task
        gc.collect()
    finally:
        loop.set_exception_handler(previous)
    return reports


async def test_a_failed_async_send_is_told_to_its_callback_only(
    namesrv_no_autocreate: str,
) -> None:
    errors: list[BaseException | None] = []
    config = config_for(namesrv_no_autocreate)
    async with Producer(unique("pg"), config=config) as producer:
        missing = Message(unique("NoSuchTopic"), b"lost")
        reports = await _reports_once_dropped(
            producer, missing, lambda _result, error: errors.append(error)
        )
        # Who awaits the task still gets the failure.
        with pytest.raises(NoRouteError):
            await producer.send_async(missing, lambda _result, error: None)
    [error] = errors
    assert isinstance(error, NoRouteError)
    assert not any("never retrieved" in r for r in reports), reports


async def test_a_failed_async_send_without_callback_is_reported_when_nobody_awaits_it(
    namesrv_no_autocreate: str,
) -> None:
    async with Producer(unique("pg"), config=config_for(namesrv_no_autocreate)) as producer:
        missing = Message(unique("NoSuchTopic"), b"lost")
        reports = await _reports_once_dropped(producer, missing, None)
    assert reports == ["Task exception was never retrieved"]
