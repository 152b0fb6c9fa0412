"""Replication across implementations: RocketMQ's HA stream is one protocol, so an Apache
RocketMQ broker (4.9.7's jars, and 5.3.3's: its default HA service, not the controller mode's
AutoSwitch one, speaks 4.x's stream) follows a Longboat master as its slave, and a Longboat slave
follows an Apache RocketMQ master.  Each pair shares a Longboat name server, which tells the
slave where its master's HA port is; messages sent to the master are then read from the
slave, intact and in order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from client.client_e2e import config_for, unique
from conftest import Cluster, LoopThread, broker_config
from longboat.broker.controller import BrokerController
from longboat.client import BrokerError, Message, PullStatus
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader
from longboat.namesrv.server import NameServer
from longboat.protocol import ResponseCode
from longboat.protocol.types import MessageQueue
from peers.rocketmq import RocketMQCluster, broker_port, discard, start_rocketmq
from peers.rocketmq5 import start_rocketmq5_broker

pytestmark = pytest.mark.java

GROUP_NAME = "ha-interop"
COUNT = 40

StartBroker = Callable[..., RocketMQCluster]


@pytest.fixture(
    params=[start_rocketmq, start_rocketmq5_broker], ids=["rocketmq4.9.7", "rocketmq5.3.3"]
)
def start_broker(request: pytest.FixtureRequest) -> StartBroker:
    """Starts an Apache RocketMQ broker of each version in turn, registering with a given name
    server."""
    starter: StartBroker = request.param
    return starter


@pytest.fixture
def namesrv_thread() -> Iterator[tuple[LoopThread, NameServer]]:
    runner = LoopThread()
    namesrv = NameServer("127.0.0.1", 0)
    runner.run(namesrv.start())
    yield runner, namesrv
    runner.run(namesrv.stop())
    runner.close()


async def send_and_read_from(namesrv: str, topic: str, slave_addr: str) -> list[bytes]:
    """Send COUNT messages (to the master, through the name server's route) and read them
    back from the slave once it holds them all (each queue's max offset as on the master)."""
    bodies = [f"replicated {i}".encode() for i in range(COUNT)]
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for body in bodies:
            # Generous: a JVM broker's first sends on a loaded machine may take seconds.
            await producer.send(Message(topic, body), timeout=15)
    mq = MessageQueue(topic, GROUP_NAME, 0)
    got: list[bytes] = []
    async with QueueReader(config=config_for(namesrv)) as reader:
        api = reader.instance.api
        # RocketMQ 5's slave copies its master's tables once a minute (its first try may come
        # before it has learned its master's address): up to two minutes for the new topic.
        async with asyncio.timeout(150):
            while await api.get_max_offset(slave_addr, mq) < COUNT:
                await asyncio.sleep(0.2)
            offset = 0
            while offset < COUNT:
                try:
                    result = await api.pull(
                        slave_addr, mq, offset, group=unique("ha-reader"), max_msgs=32, timeout=5
                    )
                except BrokerError as exc:
                    # The slave copies its master's topic table now and then (10 s in
                    # RocketMQ 4, 60 s in 5); until then it does not serve the new topic.
                    assert exc.code == ResponseCode.TOPIC_NOT_EXIST, exc
                    await asyncio.sleep(0.5)
                    continue
                assert result.status is PullStatus.FOUND, result.status
                got += [m.body for m in result.messages]
                offset = result.next_begin_offset
    assert got == bodies
    return got


async def test_a_rocketmq_slave_follows_a_longboat_master(
    java_peers: None,
    namesrv_thread: tuple[LoopThread, NameServer],
    start_broker: StartBroker,
    tmp_path: Path,
) -> None:
    runner, namesrv = namesrv_thread
    # A fixed port with free neighbours: a Java slave asks for the topic table on the VIP
    # port (listenPort - 2) and finds the HA port at listenPort + 1.
    config = broker_config(
        tmp_path / "longboat-master",
        namesrv.addr,
        broker_name=GROUP_NAME,
        listen_port=broker_port(),
        ha_listen_port=-1,
    )
    master = BrokerController(config)
    await asyncio.to_thread(runner.run, master.start())
    master_cluster = Cluster(runner, namesrv, master, config, config.store_path_root_dir)
    try:
        topic = unique("HaToRocketMQ")
        async with Admin(config=config_for(namesrv.addr)) as admin:
            await admin.create_topic(topic, queue_nums=1)
        slave = await asyncio.to_thread(
            start_broker,
            tmp_path / "rocketmq-slave",
            namesrv_addr=namesrv.addr,
            broker_options={
                "brokerName": GROUP_NAME,
                "brokerClusterName": config.broker_cluster_name,
                "brokerId": 1,
                "brokerRole": "SLAVE",
            },
        )
        try:
            await send_and_read_from(namesrv.addr, topic, slave.broker_addr)
        finally:
            discard(slave)
    finally:
        await asyncio.to_thread(runner.run, master.stop())
        del master_cluster


async def test_a_longboat_slave_follows_a_rocketmq_master(
    java_peers: None,
    namesrv_thread: tuple[LoopThread, NameServer],
    start_broker: StartBroker,
    tmp_path: Path,
) -> None:
    runner, namesrv = namesrv_thread
    rocketmq = await asyncio.to_thread(
        start_broker,
        tmp_path / "rocketmq-master",
        namesrv_addr=namesrv.addr,
        broker_options={"brokerName": GROUP_NAME, "brokerRole": "ASYNC_MASTER"},
    )
    try:
        config = broker_config(
            tmp_path / "longboat-slave",
            namesrv.addr,
            broker_name=GROUP_NAME,
            broker_cluster_name=rocketmq.cluster_name,
            broker_id=1,
            broker_role="SLAVE",
            slave_synchronize_interval=500,
        )
        slave = BrokerController(config)
        await asyncio.to_thread(runner.run, slave.start())
        try:
            topic = unique("HaFromRocketMQ")
            async with Admin(config=config_for(namesrv.addr)) as admin:
                await admin.create_topic(topic, queue_nums=1)
            await send_and_read_from(namesrv.addr, topic, slave.broker_addr)
        finally:
            await asyncio.to_thread(runner.run, slave.stop())
    finally:
        discard(rocketmq)
