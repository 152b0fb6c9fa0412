"""A push consumer group through a master's death and return, with real broker processes on
loopback (`longboat broker`, SIGKILL): it keeps consuming from the slave while the master is
down, a second member joining meanwhile takes its share of the queues through the slave, the
queues move back to the master once it answers again, and nothing is lost; messages
delivered twice are counted, printed and bounded.  The producing side of the same faults is
`tests/broker/test_replication_faults.py`."""

from __future__ import annotations

import asyncio
import collections

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
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeResult, PushConsumer
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MASTER_ID, MessageQueue

TOPIC = "HaFailover"
CONSUMER_GROUP = "ha-failover-consumer"
PER_PHASE = 200


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
    group: BrokerGroup,  # noqa: F811
) -> None:
    master = await asyncio.to_thread(group.start, "master", "SYNC_MASTER")
    slave = await asyncio.to_thread(group.start, "slave", "SLAVE")
    await create_topic(group.namesrv, TOPIC)
    await until_synced(group.namesrv, slave, TOPIC)

    deliveries = Deliveries()
    members: list[PushConsumer] = []

    async def member(name: str) -> PushConsumer:
        def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
            deliveries.record(name, ctx.mq, msgs)
            return ConsumeResult.SUCCESS

        config = ClientConfig(
            [group.namesrv],
            client_ip="127.0.0.1",
            instance_name=name,
            poll_name_server_interval=0.5,
            persist_consumer_offset_interval=0.2,
        )
        joined = PushConsumer(
            CONSUMER_GROUP,
            config=config,
            broker_suspend_timeout=1.0,
            pull_timeout=3.0,
            rebalance_interval=1.0,
        )
        joined.subscribe(TOPIC)
        joined.register_concurrent(listener)
        await joined.start()
        members.append(joined)
        return joined

    def owned(c: PushConsumer) -> set[MessageQueue]:
        return {mq for mq in c.process_queues() if mq.topic == TOPIC}

    consumer = await member("first")
    try:
        await positioned(consumer)
        phases = [[f"{phase}-{i}" for i in range(PER_PHASE)] for phase in ("up", "down", "back")]
        everything = {body for phase in phases for body in phase}
        await send(group.namesrv, phases[0])
        await deliveries.wait_for_bodies(set(phases[0]), timeout=60)

        # Sent while the master runs (a SYNC_MASTER: each one is on the slave when
        # acknowledged), then the master dies before the consumer has pulled them.
        consumer.suspend()
        await send(group.namesrv, phases[1])
        group.kill("master")
        consumer.resume()
        await deliveries.wait_for_bodies(set(phases[0] + phases[1]), timeout=60)
        instance = consumer.instance
        queues = [MessageQueue(TOPIC, GROUP_NAME, q) for q in range(QUEUES)]
        assert all(
            instance.pull_targets.choose(mq, instance.group_addrs(GROUP_NAME)) == (1, slave)
            for mq in queues
        )

        # A second member joins while the master is down: the slave knows the group's
        # members, so the queues are shared, each starting where the first left it.
        second = await member("second")
        async with asyncio.timeout(60):
            while not (owned(second) and owned(consumer) | owned(second) == set(queues)):
                await asyncio.sleep(0.1)

        # The master comes back (on another port): the consumer's offsets, kept meanwhile,
        # reach it, and the queues move back to it.
        master = await asyncio.to_thread(group.start, "master", "SYNC_MASTER")
        await send(group.namesrv, phases[2])
        await deliveries.wait_for_bodies(everything, timeout=60)
        async with asyncio.timeout(30):
            while any(
                instance.pull_targets.choose(mq, instance.group_addrs(GROUP_NAME))
                != (MASTER_ID, master)
                for mq in queues
            ):
                await asyncio.sleep(0.1)
        async with asyncio.timeout(30):
            while any(c != end for c, end in (await committed_on_master(group.namesrv)).values()):
                await asyncio.sleep(0.2)
        assert owned(consumer) and owned(second)
    finally:
        for joined in members:
            await joined.shutdown()

    counts = collections.Counter(deliveries.bodies())
    duplicates = sum(n - 1 for n in counts.values())
    print(
        f"\nconsumer through a master's death and return: {len(everything)} sent, "
        f"{len(set(counts) & everything)} delivered, {duplicates} delivered twice or more, "
        f"{len(deliveries.bodies('second'))} by the member that joined while it was down"
    )
    assert set(counts) == everything  # nothing lost, nothing foreign
    # Bounded: a queue that changes hands while the restarted master's offsets are behind
    # (it lost the last ones with SIGKILL) is read again from there, once.
    assert max(counts.values()) <= 2
