"""Committed consumer offsets through a SIGKILL of the broker, with real broker processes on
loopback (`longboat broker`) killed at a random point (the seed is printed; set
LONGBOAT_KILL_SEED to replay one):

* every offset the master answered SUCCESS for is there after its restart, in both flush
  modes (the journal line is written before the answer; the page cache outlives the process),
  and the slave keeps what it copied from the master before the master died;
* a push consumer group killed under steady consumption resumes where it was: a new member
  with CONSUME_FROM_LAST_OFFSET receives every message the first one had not, none skipped.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

import pytest

from broker.test_replication_faults import (  # and `group`, its fixture of a broker group
    GROUP_NAME,
    QUEUES,
    BrokerGroup,
    config_for,
    create_topic,
    group,  # noqa: F401
    until_synced,
)
from client.push_support import Deliveries, positioned
from longboat.client import ClientConfig, ClientError, Message
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeResult, PushConsumer
from longboat.client.queue_reader import QueueReader
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MessageQueue


def seeded(name: str) -> random.Random:
    seed = int(os.environ.get("LONGBOAT_KILL_SEED") or random.randrange(2**32))
    print(f"\n{name}: LONGBOAT_KILL_SEED={seed}")
    return random.Random(seed)


async def offsets_on(
    namesrv: str, addr: str, consumer_group: str, topic: str
) -> dict[int, int | None]:
    async with QueueReader(config=config_for(namesrv)) as reader:
        api = reader.instance.api
        return {
            q: await api.query_consumer_offset(
                addr,
                consumer_group,
                MessageQueue(topic, GROUP_NAME, q),
                set_zero_if_not_found=False,
            )
            for q in range(QUEUES)
        }


@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
async def test_a_killed_master_keeps_every_offset_it_acknowledged_and_the_slave_what_it_copied(
    group: BrokerGroup,  # noqa: F811
    flush: str,
) -> None:
    rng = seeded(f"offsets under {flush}")
    topic, consumer_group = f"OffsetKill{flush[:1]}", f"offset-kill-{flush.lower()}"
    master = group.start("master", "SYNC_MASTER", "--flushDiskType", flush)
    slave = group.start("slave", "SLAVE")
    await create_topic(group.namesrv, topic)
    await until_synced(group.namesrv, slave, topic)

    acked: dict[int, int] = {}  # queue → the last offset answered SUCCESS
    sent: dict[int, int] = {}  # queue → the last offset asked for (answered or not)
    stop = asyncio.Event()

    async def committer(reader: QueueReader, queue_id: int) -> None:
        mq = MessageQueue(topic, GROUP_NAME, queue_id)
        offset = 0
        while not stop.is_set():
            offset += rng.randint(1, 5)
            sent[queue_id] = offset
            try:
                await reader.instance.api.update_consumer_offset(master, consumer_group, mq, offset)
            except (ClientError, OSError):
                return
            acked[queue_id] = offset

    async with QueueReader(config=config_for(group.namesrv)) as reader:
        committing = [asyncio.ensure_future(committer(reader, q)) for q in range(QUEUES)]
        # The slave copies the master's offsets (every 200 ms here): once it holds at least
        # a snapshot of what was acknowledged, keep committing a random while, then kill.
        async with asyncio.timeout(30):
            while len(acked) < QUEUES:
                await asyncio.sleep(0.05)
        copied_at_least = dict(acked)
        async with asyncio.timeout(30):
            while True:
                on_slave = await offsets_on(group.namesrv, slave, consumer_group, topic)
                if all((on_slave[q] or -1) >= copied_at_least[q] for q in range(QUEUES)):
                    break
                await asyncio.sleep(0.1)
        await asyncio.sleep(rng.uniform(0.0, 1.5))
        group.kill("master")
        stop.set()
        await asyncio.gather(*committing)
    last_acked, last_sent = dict(acked), dict(sent)

    on_slave = await offsets_on(group.namesrv, slave, consumer_group, topic)
    master = group.start("master", "SYNC_MASTER", "--flushDiskType", flush)
    restarted = await offsets_on(group.namesrv, master, consumer_group, topic)
    print(f"acknowledged {last_acked}, restarted master {restarted}, slave {on_slave}")
    for q in range(QUEUES):
        assert last_acked[q] <= (restarted[q] or -1) <= last_sent[q], q
        assert copied_at_least[q] <= (on_slave[q] or -1) <= last_sent[q], q


async def test_a_group_killed_under_steady_consumption_resumes_and_skips_nothing(
    group: BrokerGroup,  # noqa: F811
) -> None:
    rng = seeded("consumption")
    topic, consumer_group, count = "OffsetKillConsume", "offset-kill-consumer", 400
    group.start("master", "ASYNC_MASTER")
    await create_topic(group.namesrv, topic)
    deliveries = Deliveries()

    async def member(name: str) -> PushConsumer:
        def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
            time.sleep(0.01)  # ~100 a second: a backlog remains when the broker dies
            deliveries.record(name, ctx.mq, msgs)
            return ConsumeResult.SUCCESS

        config = ClientConfig(
            [group.namesrv],
            client_ip="127.0.0.1",
            instance_name=name,
            persist_consumer_offset_interval=0.2,
        )
        consumer = PushConsumer(
            consumer_group,
            config=config,
            broker_suspend_timeout=1.0,
            pull_timeout=3.0,
            consume_thread_max=1,
            shutdown_timeout=5.0,
        )  # consume_from: CONSUME_FROM_LAST_OFFSET, the default
        consumer.subscribe(topic)
        consumer.register_concurrent(listener)
        await consumer.start()
        await positioned(consumer)
        return consumer

    async def send(bodies: list[str]) -> None:
        async with Producer("offset-kill-producer", config=config_for(group.namesrv)) as p:
            for body in bodies:
                await p.send(Message(topic, body.encode()))

    first = await member("first")
    bodies = [f"m-{i}" for i in range(count)]
    try:
        first.suspend()  # a backlog: all sent before consumption starts
        await send(bodies)
        first.resume()
        # Steady consumption has begun and the broker holds a committed offset of the group:
        # the kill comes at a random point of the group's first second of commits.
        async with asyncio.timeout(30):
            while not any(
                (
                    await offsets_on(group.namesrv, group.addrs["master"], consumer_group, topic)
                ).values()
            ):
                await asyncio.sleep(0.05)
        await asyncio.sleep(rng.uniform(0.0, 1.0))
        group.kill("master")
    finally:
        await first.shutdown()
    got_before = set(deliveries.bodies())
    print(f"{len(got_before)} of {count} consumed before the kill")
    assert len(got_before) < count, "all consumed before the kill: nothing was at risk"

    group.start("master", "ASYNC_MASTER")
    second = await member("second")
    try:
        await deliveries.wait_for_bodies(set(bodies), timeout=60)
    finally:
        await second.shutdown()
    again = len(deliveries.bodies("second")) - len(set(bodies) - got_before)
    print(f"redelivered after the restart: {again}")
