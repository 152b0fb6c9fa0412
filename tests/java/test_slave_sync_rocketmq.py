"""Longboat slaves and Apache RocketMQ: a Longboat slave copies a RocketMQ master's metadata
(SlaveSynchronize's four requests, `broker/services/ha/slave_sync.py`) from the session's
`rocketmq_cluster` broker — its topic table, consumer offsets, delay-level progress and group
settings, read from the bodies a Java broker writes — and RocketMQ's Java consumer reads from a
Longboat slave while its master is down."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.wire import eventually
from client.client_e2e import config_for, unique
from client.push_support import send
from conftest import broker_config
from longboat.broker import BrokerController
from longboat.broker.services.delay_schedule import DELAY_OFFSET_FILE
from longboat.client.admin import Admin
from longboat.namesrv import NameServer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import SubscriptionGroupConfig
from longboat.protocol.fastjson import loads
from longboat.protocol.types import MessageQueue
from peers.rocketmq import RocketMQCluster, start_java_peer

pytestmark = pytest.mark.java


async def test_a_longboat_slave_copies_a_rocketmq_masters_tables(
    rocketmq_cluster: RocketMQCluster, tmp_path: Path
) -> None:
    rmq = rocketmq_cluster
    topic, group = unique("SyncedTopic"), unique("synced-group")
    async with Admin(config=config_for(rmq.namesrv_addr)) as admin:
        await admin.create_topic(topic, queue_nums=2)
        api = admin.instance.api
        for queue_id, offset in ((0, 11), (1, 4)):
            mq = MessageQueue(topic, rmq.broker_name, queue_id)
            await api.update_consumer_offset(rmq.broker_addr, group, mq, offset, oneway=False)
        settings = SubscriptionGroupConfig(group, retry_max_times=5)
        reply = await admin.instance.remoting.request(
            rmq.broker_addr,
            RemotingCommand.request(
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, settings.to_json()
            ),
            10,
        )
        assert reply.code == ResponseCode.SUCCESS, reply.remark

    # A slave with no name server: it is told its master's remoting address directly (the
    # address a name server would name); it has no HA address, so it copies no log here.
    slave = BrokerController(
        broker_config(
            tmp_path / "slave",
            "",
            broker_name=rmq.broker_name,
            broker_role="SLAVE",
            broker_id=1,
            ha_listen_port=0,
            slave_synchronize_interval=200,
        )
    )
    await slave.start()
    try:
        assert slave.slave_sync is not None
        slave.slave_sync.master_addr = rmq.broker_addr

        def copied() -> bool:
            return (
                slave.offsets.queue_offsets(group, topic) == {0: 11, 1: 4}
                and slave.subscription_groups.get(group).retry_max_times == 5
                and slave.topics.get(topic) is not None
                and (slave.store.config.config_dir / DELAY_OFFSET_FILE).exists()
            )

        await eventually(copied, "the slave's copy of the RocketMQ master's tables", timeout=30)
        synced = slave.topics.get(topic)
        assert synced is not None and synced.read_queue_nums == 2
        progress = loads((slave.store.config.config_dir / DELAY_OFFSET_FILE).read_bytes())
        assert isinstance(progress.get("offsetTable"), dict)
    finally:
        await slave.stop()


async def test_a_java_consumer_reads_from_a_longboat_slave_while_the_master_is_down(
    java_peers: None, tmp_path: Path
) -> None:
    """Apache RocketMQ's DefaultMQPushConsumer, unchanged, against a Longboat master and slave:
    with the master stopped, the routes list only the slave, and the Java client's
    findBrokerAddressInSubscribe sends its pulls (and offset commits) there."""
    namesrv = NameServer("127.0.0.1", 0)
    await namesrv.start()
    options = {"broker_name": "java-group", "ha_listen_port": 0, "slave_synchronize_interval": 200}
    master = BrokerController(broker_config(tmp_path / "master", namesrv.addr, **options))
    slave = BrokerController(
        broker_config(tmp_path / "slave", namesrv.addr, broker_role="SLAVE", broker_id=1, **options)
    )
    await master.start()
    await slave.start()
    try:
        topic = unique("ReadFromSlave")
        async with Admin(config=config_for(namesrv.addr)) as admin:
            await admin.create_topic(topic, queue_nums=2)
        bodies = [f"s{i}" for i in range(40)]
        await send(namesrv.addr, topic, bodies)
        await eventually(
            lambda: (
                slave.store.max_physical_offset == master.store.max_physical_offset
                and slave.topics.get(topic) is not None
            ),
            "the slave's copy",
        )
        await master.stop()
        with start_java_peer(
            "PushConsume",
            namesrv=namesrv.addr,
            topic=topic,
            group=unique("java-on-slave"),
            expect=len(bodies),
            timeout_ms=60000,
        ) as peer:
            events = await asyncio.to_thread(peer.wait, 90)
        got = sorted(e["body"] for e in events if e["event"] == "msg")
        assert got == sorted(bodies)
    finally:
        await slave.stop()
        await master.stop()
        await namesrv.stop()
