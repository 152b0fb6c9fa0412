"""Pop acknowledgements through a crash, per flush mode.

* A broker process (`longboat broker`) SIGKILLed at a random point under steady receive, ack
  and change-invisible by several pop consumers (the seed is printed; LONGBOAT_KILL_SEED
  replays one): after its restart no message whose ack was answered OK is delivered again,
  and every other message is.  Both flush modes: the journal record is written before the
  answer and the page cache outlives the process.
* Against a machine crash (which a test cannot stage) the journal's fsync is what counts:
  under SYNC_FLUSH an ack is answered only once the journal is fsynced up to it; under
  ASYNC_FLUSH the answer does not wait and the flush thread syncs within the interval.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from broker.test_offsets_survive_kill import seeded
from broker.test_replication_faults import (  # and `group`, its fixture of a broker group
    BrokerGroup,
    config_for,
    create_topic,
    group,  # noqa: F401
)
from longboat.broker.controller import BrokerController
from longboat.client import BrokerError, ClientConfig, ClientError, Message
from longboat.client.pop import PopConsumer, PoppedMessage
from longboat.client.producer import Producer
from longboat.protocol.bodies import TopicConfig
from longboat.store import FlushDiskType

COUNT = 1500
MEMBERS = 3


async def settle(consumer: PopConsumer, popped: PoppedMessage, rng: random.Random) -> bool:
    """One message's fate, drawn at random: left to come back, re-armed (longer, or at once)
    then acked, or acked; whether its ack was answered OK."""
    draw = rng.random()
    if draw < 0.2:
        return False
    try:
        if draw < 0.4:
            await consumer.change_invisible_time(popped, rng.choice([0.0, 30.0]))
        await consumer.ack(popped)
    except BrokerError:  # re-armed to 0 and popped again by another member meanwhile
        return False
    return True


@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
async def test_a_broker_killed_under_steady_pop_consumption_never_redelivers_an_acked_message(
    group: BrokerGroup,  # noqa: F811
    flush: str,
) -> None:
    rng = seeded(f"pop acks under {flush}")
    topic, consumer_group = f"PopAckKill{flush[:1]}", f"pop-ack-kill-{flush.lower()}"
    group.start("master", "ASYNC_MASTER", "--flushDiskType", flush)
    await create_topic(group.namesrv, topic)
    bodies = {f"m-{i}".encode() for i in range(COUNT)}
    async with Producer("pop-ack-kill-producer", config=config_for(group.namesrv)) as producer:
        for batch in range(0, COUNT, 100):
            await producer.send_batch(
                [Message(topic, f"m-{i}".encode()) for i in range(batch, batch + 100)]
            )

    acked: set[bytes] = set()
    # A member's message whose ack (or re-arm) was asked and not yet answered: when the kill
    # cuts the answer off, the broker may have done it or not.
    unanswered: dict[int, bytes] = {}
    stop = asyncio.Event()

    async def member(n: int, consumer: PopConsumer) -> None:
        while not stop.is_set():
            try:
                got = await consumer.receive(topic, max_messages=8, invisible_time=60, wait=1)
                for popped in got:
                    unanswered[n] = popped.body
                    if await settle(consumer, popped, rng):
                        acked.add(popped.body)
                    del unanswered[n]
            except (ClientError, OSError):
                return  # the broker is gone

    consumers = [
        PopConsumer(consumer_group, config=ClientConfig([group.namesrv], instance_name=f"m{n}"))
        for n in range(MEMBERS)
    ]
    for consumer in consumers:
        await consumer.start()
    try:
        members = [asyncio.ensure_future(member(n, c)) for n, c in enumerate(consumers)]
        async with asyncio.timeout(30):  # steady consumption has begun
            while len(acked) < 50:
                await asyncio.sleep(0.01)
        await asyncio.sleep(rng.uniform(0.0, 1.0))
        group.kill("master")
        stop.set()
        await asyncio.gather(*members)
    finally:
        for consumer in consumers:
            await consumer.shutdown()
    acked_before, uncertain = set(acked), set(unanswered.values())
    print(f"{len(acked_before)} of {COUNT} acknowledged before the kill, {uncertain} unanswered")
    assert len(acked_before) < COUNT, "all acknowledged before the kill: nothing was at risk"

    group.start("master", "ASYNC_MASTER", "--flushDiskType", flush)
    # After the restart every message still in flight is visible at once: receive until all
    # the unacknowledged ones came (the positive signal) and a receive then finds nothing.
    expected = bodies - acked_before - uncertain
    after: list[bytes] = []
    async with PopConsumer(consumer_group, config=config_for(group.namesrv)) as consumer:
        async with asyncio.timeout(120):
            while True:
                got = await consumer.receive(topic, max_messages=32, invisible_time=60, wait=1)
                after += [m.body for m in got]
                await asyncio.gather(*(consumer.ack(popped) for popped in got))
                if not got and expected <= set(after):
                    break
    assert not acked_before & set(after), sorted(acked_before & set(after))[:10]
    assert expected <= set(after) <= expected | uncertain


@pytest.mark.parametrize("flush", [FlushDiskType.SYNC_FLUSH, FlushDiskType.ASYNC_FLUSH])
async def test_an_ack_is_answered_after_its_fsync_under_sync_flush_only(
    loopback_broker,
    flush: FlushDiskType,
) -> None:
    broker: BrokerController = await loopback_broker(
        flush_disk_type=flush, flush_interval_commit_log=200
    )
    topic = "PopAckFsync"
    broker.topics.create_topic(TopicConfig(topic, read_queue_nums=2, write_queue_nums=2))
    namesrv = broker.config.namesrv_addr
    async with Producer("pop-fsync-producer", config=config_for(namesrv)) as producer:
        await producer.send_batch([Message(topic, f"m-{i}".encode()) for i in range(20)])
    journal, flusher = broker.pop.journal.file, broker.pop.flusher
    async with PopConsumer("pop-fsync", config=config_for(namesrv)) as consumer:
        got: list[PoppedMessage] = []
        async with asyncio.timeout(20):
            while len(got) < 20:
                got += await consumer.receive(topic, max_messages=32, wait=1)
        for popped in got:
            await consumer.ack(popped)
            if flush is FlushDiskType.SYNC_FLUSH:
                # Nothing else writes meanwhile: the answer came after an fsync covering all.
                assert journal.synced == journal.written
    if flush is FlushDiskType.SYNC_FLUSH:
        assert flusher.requests >= 1
        return
    assert flusher.requests == 0  # no answer waited
    async with asyncio.timeout(10):  # the flush thread syncs within the interval
        while journal.synced < journal.written:
            await asyncio.sleep(0.05)
