"""Master and slave brokers in one broker group, over real sockets on loopback: the slave
learns its master from the name server, copies its commit log with RocketMQ's HA stream and
serves what it copied; a SYNC_MASTER answers a send only once the slave has it, else
FLUSH_SLAVE_TIMEOUT (a slave that stops acknowledging) or SLAVE_NOT_AVAILABLE (none, or one
further behind than haSlaveFallbehindMax); a slave refuses sends; a slave stopped and started
again catches up."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import broker_config
from longboat.broker import BrokerController
from longboat.client import BrokerError, ClientConfig, Message, PullStatus, SendStatus
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader
from longboat.namesrv import NameServer
from longboat.protocol import ResponseCode
from longboat.protocol.ha import encode_report
from longboat.protocol.types import MessageQueue

GROUP_NAME = "ha-group"
TOPIC = "HaOrders"

StartBroker = Callable[..., Awaitable[BrokerController]]


@pytest.fixture
async def start_broker(tmp_path: Path, namesrv: NameServer) -> AsyncIterator[StartBroker]:
    running: list[BrokerController] = []

    async def start(directory: str, **options: Any) -> BrokerController:
        config = broker_config(
            tmp_path / directory,
            namesrv.addr,
            broker_name=GROUP_NAME,
            ha_listen_port=0,
            ha_send_heartbeat_interval=200,
            slave_synchronize_interval=200,
            **options,
        )
        broker = BrokerController(config)
        await broker.start()
        running.append(broker)
        return broker

    yield start
    for broker in reversed(running):
        await broker.stop()


def config_for(namesrv: NameServer) -> ClientConfig:
    return ClientConfig([namesrv.addr], client_ip="127.0.0.1")


async def until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def read_all(reader: QueueReader, addr: str, mq: MessageQueue) -> list[bytes]:
    """Every message body of `mq` on the broker at `addr` (a slave, here)."""
    bodies: list[bytes] = []
    offset = 0
    while True:
        result = await reader.instance.api.pull(
            addr, mq, offset, group="ha-reader", max_msgs=32, timeout=5
        )
        if result.status is not PullStatus.FOUND:
            return bodies
        bodies += [m.body for m in result.messages]
        offset = result.next_begin_offset


async def test_a_sync_master_answers_once_its_slave_has_the_message(
    namesrv: NameServer, start_broker: StartBroker
) -> None:
    master = await start_broker("master", broker_role="SYNC_MASTER")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(TOPIC, queue_nums=2)
    async with Producer("ha-producer", config=config_for(namesrv)) as producer:
        # No slave yet: stored, but the send says so.
        lonely = await producer.send(Message(TOPIC, b"before the slave"))
        assert lonely.status is SendStatus.SLAVE_NOT_AVAILABLE

        slave = await start_broker("slave", broker_role="SLAVE", broker_id=1)
        assert slave.ha_slave is not None and master.ha_master is not None
        await until(lambda: bool(master.ha_master and master.ha_master.slaves), "slave connects")
        sent = [
            await producer.send(Message(TOPIC, f"order {i}".encode(), keys=f"o{i}"))
            for i in range(50)
        ]
        assert {r.status for r in sent} == {SendStatus.SEND_OK}
        # Each SEND_OK came after the slave acknowledged it: the slave holds every byte.
        assert master.ha_master.replicated_offset >= master.store.max_physical_offset
    assert slave.store.max_physical_offset == master.store.max_physical_offset

    # The slave serves what it copied, once its topic table followed the master's.
    await until(lambda: slave.topics.get(TOPIC) is not None, "topic synced")
    async with QueueReader(config=config_for(namesrv)) as reader:
        got: list[bytes] = []
        for queue_id in range(2):
            mq = MessageQueue(TOPIC, GROUP_NAME, queue_id)
            got += await read_all(reader, slave.broker_addr, mq)
    assert sorted(got) == sorted([b"before the slave"] + [f"order {i}".encode() for i in range(50)])


async def silent_slave(master: BrokerController) -> asyncio.StreamWriter:
    """A slave that connects to the master's HA port, reports an empty log once and then
    never acknowledges anything (a frozen or partitioned slave)."""
    assert master.ha_master is not None
    _, writer = await asyncio.open_connection("127.0.0.1", master.ha_master.port)
    writer.write(encode_report(0))
    await writer.drain()
    ha = master.ha_master
    await until(lambda: any(s.ack_offset >= 0 for s in ha.slaves), "the slave reported")
    return writer


@pytest.mark.parametrize(
    ("fallbehind_max", "body_size", "expected"),
    [
        # Close enough to wait for, but it never acknowledges: stored, the wait times out.
        (256 * 1024 * 1024, 10, SendStatus.FLUSH_SLAVE_TIMEOUT),
        # Further behind than haSlaveFallbehindMax: not waited for at all.
        (1024, 3000, SendStatus.SLAVE_NOT_AVAILABLE),
    ],
)
async def test_a_sync_master_tells_what_its_slave_failed_to_do(
    namesrv: NameServer,
    start_broker: StartBroker,
    fallbehind_max: int,
    body_size: int,
    expected: SendStatus,
) -> None:
    master = await start_broker(
        "master",
        broker_role="SYNC_MASTER",
        sync_flush_timeout=300,
        ha_slave_fallbehind_max=fallbehind_max,
    )
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(TOPIC, queue_nums=1)
    writer = await silent_slave(master)
    try:
        async with Producer("ha-producer", config=config_for(namesrv)) as producer:
            result = await producer.send(Message(TOPIC, os.urandom(body_size)))
        assert result.status is expected
        # Stored on the master all the same.
        assert master.store.max_offset(TOPIC, 0) == 1
    finally:
        writer.close()


async def test_a_slave_refuses_sends_and_catches_up_after_a_restart(
    namesrv: NameServer, start_broker: StartBroker
) -> None:
    master = await start_broker("master", broker_role="ASYNC_MASTER")
    slave = await start_broker("slave", broker_role="SLAVE", broker_id=1)
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(TOPIC, queue_nums=1)
    mq = MessageQueue(TOPIC, GROUP_NAME, 0)
    async with Producer("ha-producer", config=config_for(namesrv)) as producer:
        for i in range(20):
            await producer.send(Message(TOPIC, f"first {i}".encode()))
        await until(
            lambda: slave.store.max_physical_offset == master.store.max_physical_offset,
            "replicated",
        )
        # Sent to the slave itself: refused, and nothing is stored there.
        header, body, uniq = producer._prepare(Message(TOPIC, b"to the slave"))
        with pytest.raises(BrokerError) as refused:
            await producer.instance.api.send(
                slave.broker_addr, mq, header, body, msg_id=uniq, timeout=5
            )
        assert refused.value.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "slave" in str(refused.value)

        await slave.stop()
        for i in range(30):
            await producer.send(Message(TOPIC, f"second {i}".encode()))
    slave = await start_broker("slave", broker_role="SLAVE", broker_id=1)
    await until(
        lambda: slave.store.max_physical_offset == master.store.max_physical_offset, "caught up"
    )
    await until(lambda: slave.topics.get(TOPIC) is not None, "topic synced")
    async with QueueReader(config=config_for(namesrv)) as reader:
        got = await read_all(reader, slave.broker_addr, mq)
    expected = [f"first {i}".encode() for i in range(20)] + [
        f"second {i}".encode() for i in range(30)
    ]
    assert got == expected  # in order, once each
