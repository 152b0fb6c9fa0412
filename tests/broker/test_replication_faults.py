"""Replication under faults, with real broker processes on loopback (`longboat broker`) and
SIGKILL: a SYNC_MASTER killed while 8 producers send loses nothing it acknowledged (every
SEND_OK is on the slave); an ASYNC_MASTER loses at most the tail its slave had not copied
(measured and printed); a slave killed mid-stream and started again catches up, byte for
byte, in order."""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cli.processes import ServerProcess
from conftest import LoopThread
from longboat.client import ClientConfig, ClientError, Message, PullStatus, SendStatus
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader
from longboat.namesrv.server import NameServer
from longboat.protocol.types import MessageQueue

GROUP_NAME = "ha-faults"
QUEUES = 4
PRODUCERS = 8


@dataclass
class BrokerGroup:
    namesrv: str
    home: Path
    processes: dict[str, ServerProcess] = field(default_factory=dict)
    addrs: dict[str, str] = field(default_factory=dict)

    def start(self, name: str, role: str, *extra: str) -> str:
        """Start (or restart, on the same store) broker `name`; `extra` are more flags."""
        args = [
            "broker",
            "--brokerName", GROUP_NAME,
            "--brokerRole", role,
            "--brokerId", "1" if role == "SLAVE" else "0",
            "--listenPort", "0",
            "--listenHost", "127.0.0.1",
            "--brokerIP1", "127.0.0.1",
            "--haListenPort", "0",
            "--namesrvAddr", self.namesrv,
            "--storePathRootDir", str(self.home / name),
            "--grpcListenPort", "-1",
            "--haSendHeartbeatInterval", "200",
            "--slaveSynchronizeInterval", "200",
            "--syncFlushTimeout", "3000",
            *extra,
        ]  # fmt: skip
        proc = ServerProcess(args, self.home / "cli")
        self.processes[name] = proc
        served = re.search(r"serving at (127\.0\.0\.1:\d+)", proc.wait_for("Ctrl-C stops"))
        assert served, proc.output
        self.addrs[name] = served.group(1)
        return self.addrs[name]

    def kill(self, name: str) -> None:
        self.processes[name].proc.send_signal(signal.SIGKILL)
        self.processes[name].kill()

    def stop_all(self) -> None:
        for proc in self.processes.values():
            proc.kill()


@pytest.fixture
def group(tmp_path: Path) -> Iterator[BrokerGroup]:
    runner = LoopThread()
    namesrv = NameServer("127.0.0.1", 0)
    runner.run(namesrv.start())
    made = BrokerGroup(namesrv.addr, tmp_path)
    yield made
    made.stop_all()
    runner.run(namesrv.stop())
    runner.close()


def config_for(namesrv: str) -> ClientConfig:
    return ClientConfig([namesrv], client_ip="127.0.0.1")


async def create_topic(namesrv: str, topic: str) -> None:
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=QUEUES)


@dataclass
class Acked:
    """What the producers were told: message queue and offset of each body, by status."""

    by_status: dict[SendStatus, dict[bytes, tuple[int, int]]] = field(default_factory=dict)
    failed: int = 0

    def ok(self) -> dict[bytes, tuple[int, int]]:
        return self.by_status.get(SendStatus.SEND_OK, {})


async def produce_until(namesrv: str, topic: str, stop: asyncio.Event, acked: Acked) -> None:
    """PRODUCERS producers sending distinct bodies one at a time until `stop`."""

    async def one(n: int) -> None:
        async with Producer(f"ha-p{n}", config=config_for(namesrv), send_timeout=1.0) as producer:
            i = 0
            while not stop.is_set():
                body = f"p{n}-{i}".encode()
                i += 1
                try:
                    result = await producer.send(Message(topic, body))
                except ClientError:
                    acked.failed += 1
                    continue
                where = (result.message_queue.queue_id, result.queue_offset)
                acked.by_status.setdefault(result.status, {})[body] = where

    await asyncio.gather(*(one(n) for n in range(PRODUCERS)))


async def read_queues(namesrv: str, addr: str, topic: str) -> dict[int, list[bytes]]:
    """Every message of every queue of `topic` on the broker at `addr`, in queue order."""
    out: dict[int, list[bytes]] = {}
    async with QueueReader(config=config_for(namesrv)) as reader:
        api = reader.instance.api
        for queue_id in range(QUEUES):
            mq = MessageQueue(topic, GROUP_NAME, queue_id)
            bodies: list[bytes] = []
            while True:
                result = await api.pull(
                    addr, mq, len(bodies), group="ha-check", max_msgs=32, timeout=5
                )
                if result.status is not PullStatus.FOUND:
                    break
                bodies += [m.body for m in result.messages]
            out[queue_id] = bodies
    return out


async def until_synced(namesrv: str, slave: str, topic: str) -> None:
    """The slave copied the topic table (it serves the topic's queues)."""
    async with QueueReader(config=config_for(namesrv)) as reader:
        async with asyncio.timeout(30):
            while True:
                try:
                    await reader.instance.api.get_max_offset(
                        slave, MessageQueue(topic, GROUP_NAME, 0)
                    )
                    await reader.instance.api.pull(
                        slave, MessageQueue(topic, GROUP_NAME, 0), 0, group="ha-check",
                        max_msgs=1, timeout=5,
                    )  # fmt: skip
                    return
                except ClientError:
                    await asyncio.sleep(0.2)


async def kill_master_while_producing(
    group: BrokerGroup, role: str, topic: str
) -> tuple[Acked, dict[int, list[bytes]]]:
    group.start("master", role)
    slave = group.start("slave", "SLAVE")
    await create_topic(group.namesrv, topic)
    await until_synced(group.namesrv, slave, topic)
    stop, acked = asyncio.Event(), Acked()
    producing = asyncio.ensure_future(produce_until(group.namesrv, topic, stop, acked))
    await asyncio.sleep(2.0)
    group.kill("master")
    stop.set()
    await producing
    return acked, await read_queues(group.namesrv, slave, topic)


async def test_a_killed_sync_master_lost_nothing_it_acknowledged(group: BrokerGroup) -> None:
    acked, on_slave = await kill_master_while_producing(group, "SYNC_MASTER", "HaSyncKill")
    ok = acked.ok()
    assert len(ok) > 50, acked
    stored = {body for bodies in on_slave.values() for body in bodies}
    missing = set(ok) - stored
    print(
        f"\nSYNC_MASTER killed: {len(ok)} SEND_OK, {len(stored)} on the slave, "
        f"{len(missing)} acknowledged but missing, {acked.failed} sends failed"
    )
    assert not missing
    # Where the producers were told each message went is where the slave has it.
    for body, (queue_id, offset) in ok.items():
        assert on_slave[queue_id][offset] == body


async def test_a_killed_async_master_loses_at_most_the_uncopied_tail(group: BrokerGroup) -> None:
    acked, on_slave = await kill_master_while_producing(group, "ASYNC_MASTER", "HaAsyncKill")
    ok = acked.ok()
    assert len(ok) > 50, acked
    lost = {body: where for body, where in ok.items() if where[1] >= len(on_slave[where[0]])}
    print(
        f"\nASYNC_MASTER killed: {len(ok)} SEND_OK, {len(lost)} lost (the uncopied tail), "
        f"{acked.failed} sends failed"
    )
    # The slave holds a prefix of each queue, exactly as acknowledged: losses are a tail.
    for body, (queue_id, offset) in ok.items():
        if body not in lost:
            assert on_slave[queue_id][offset] == body


async def test_a_killed_slave_catches_up_when_started_again(group: BrokerGroup) -> None:
    master = group.start("master", "ASYNC_MASTER")
    slave = group.start("slave", "SLAVE")
    topic = "HaSlaveKill"
    await create_topic(group.namesrv, topic)
    stop, acked = asyncio.Event(), Acked()
    producing = asyncio.ensure_future(produce_until(group.namesrv, topic, stop, acked))
    await asyncio.sleep(1.0)
    group.kill("slave")
    await asyncio.sleep(1.0)
    slave = group.start("slave", "SLAVE")
    await asyncio.sleep(0.5)
    stop.set()
    await producing
    await until_synced(group.namesrv, slave, topic)
    on_master = await read_queues(group.namesrv, master, topic)
    async with asyncio.timeout(30):
        while await read_queues(group.namesrv, slave, topic) != on_master:
            await asyncio.sleep(0.2)
    assert sum(map(len, on_master.values())) >= len(acked.ok()) > 50
