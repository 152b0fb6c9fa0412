"""A push consumer through a master's death and return, with real broker processes on
loopback (`longboat broker`, SIGKILL): it keeps consuming from the slave while the master is
down, moves back to the master once it answers again, and loses nothing; messages delivered
twice are counted, printed and bounded.  The producing side of the same faults is
`tests/broker/test_replication_faults.py`."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.test_replication_faults import (
    GROUP_NAME,
    QUEUES,
    BrokerGroup,
    config_for,
    create_topic,
    until_synced,
)
from client.push_support import Deliveries, positioned
from conftest import LoopThread
from longboat.client import ClientConfig, ClientError, Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeResult, PushConsumer
from longboat.namesrv.server import NameServer
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MASTER_ID, MessageQueue

TOPIC = "HaFailover"
CONSUMER_GROUP = "ha-failover-consumer"
PER_PHASE = 200


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[BrokerGroup]:
    runner = LoopThread()
    namesrv = NameServer("127.0.0.1", 0)
    runner.run(namesrv.start())
    made = BrokerGroup(namesrv.addr, tmp_path)
    yield made
    made.stop_all()
    runner.run(namesrv.stop())
    runner.close()


async def send(namesrv: str, bodies: list[str]) -> None:
    """Every body sent and acknowledged (retried while the master is coming back)."""
    async with Producer("ha-failover-producer", config=config_for(namesrv)) as producer:
        for body in bodies:
            async with asyncio.timeout(60):
                while True:
                    try:
                        await producer.send(Message(TOPIC, body.encode()))
                        break
                    except ClientError:
                        await asyncio.sleep(0.2)


async def committed_on_master(namesrv: str) -> dict[int, tuple[int | None, int]]:
    """Queue → (the group's committed offset, the queue's end) as the master reports them."""
    async with Admin(config=config_for(namesrv)) as admin:
        progress = await admin.group_progress(CONSUMER_GROUP)
    return {
        p.mq.queue_id: (p.consumer_offset, p.broker_offset) for p in progress if p.mq.topic == TOPIC
    }


async def test_a_consumer_reads_from_the_slave_while_the_master_is_down_and_comes_back(
    brokers: BrokerGroup,
) -> None:
    master = await asyncio.to_thread(brokers.start, "master", "SYNC_MASTER")
    slave = await asyncio.to_thread(brokers.start, "slave", "SLAVE")
    await create_topic(brokers.namesrv, TOPIC)
    await until_synced(brokers.namesrv, slave, TOPIC)

    deliveries = Deliveries()

    def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
        deliveries.record("c", ctx.mq, msgs)
        return ConsumeResult.SUCCESS

    config = ClientConfig(
        [brokers.namesrv],
        client_ip="127.0.0.1",
        poll_name_server_interval=0.5,
        persist_consumer_offset_interval=0.2,
    )
    consumer = PushConsumer(
        CONSUMER_GROUP,
        config=config,
        broker_suspend_timeout=1.0,
        pull_timeout=3.0,
    )
    consumer.subscribe(TOPIC)
    consumer.register_concurrent(listener)
    await consumer.start()
    try:
        await positioned(consumer)
        phases = [[f"{phase}-{i}" for i in range(PER_PHASE)] for phase in ("up", "down", "back")]
        everything = {body for phase in phases for body in phase}
        await send(brokers.namesrv, phases[0])
        await deliveries.wait_for_bodies(set(phases[0]), timeout=60)

        # Sent while the master runs (a SYNC_MASTER: each one is on the slave when
        # acknowledged), then the master dies before the consumer has pulled them.
        consumer.suspend()
        await send(brokers.namesrv, phases[1])
        brokers.kill("master")
        consumer.resume()
        await deliveries.wait_for_bodies(set(phases[0] + phases[1]), timeout=60)
        instance = consumer.instance
        queues = [MessageQueue(TOPIC, GROUP_NAME, q) for q in range(QUEUES)]
        assert all(
            instance.pull_targets.choose(mq, instance.group_addrs(GROUP_NAME)) == (1, slave)
            for mq in queues
        )

        # The master comes back (on another port): the consumer's offsets, kept meanwhile,
        # reach it, and the queues move back to it.
        master = await asyncio.to_thread(brokers.start, "master", "SYNC_MASTER")
        await send(brokers.namesrv, phases[2])
        await deliveries.wait_for_bodies(everything, timeout=60)
        async with asyncio.timeout(30):
            while any(
                instance.pull_targets.choose(mq, instance.group_addrs(GROUP_NAME))
                != (MASTER_ID, master)
                for mq in queues
            ):
                await asyncio.sleep(0.1)
        async with asyncio.timeout(30):
            while any(c != end for c, end in (await committed_on_master(brokers.namesrv)).values()):
                await asyncio.sleep(0.2)
    finally:
        await consumer.shutdown()

    counts = collections.Counter(deliveries.bodies())
    duplicates = sum(n - 1 for n in counts.values())
    print(
        f"\nconsumer through a master's death and return: {len(everything)} sent, "
        f"{len(set(counts) & everything)} delivered, {duplicates} delivered twice or more"
    )
    assert set(counts) == everything  # nothing lost, nothing foreign
    # Bounded: at most one batch per queue is delivered again (none with one member).
    assert duplicates <= QUEUES * 32
