"""A controller-mode cluster of real processes, and a checker of what it acknowledged.

`ProcessCluster` starts controllers (`longboat controller -c`), a name server and the brokers
of one group (`longboat broker -c`, `enableControllerMode=true`, `allAckInSyncStateSet=true`)
as child processes on free 127.0.0.1 ports, each with its own directory and log file, so a
test or a script can SIGKILL any of them and start it again on the same store.

`SendChecker` sends numbered messages steadily and records every send the broker
acknowledged (SEND_OK); `verify` then reads every queue of the topic back and reports what
was lost, what a queue holds twice and where a queue's order differs from the send order.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from longboat.client.config import ClientConfig
from longboat.client.errors import ClientError
from longboat.client.message import Message, SendStatus
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader
from longboat.controller.config import free_controller_ports
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.controller import (
    BrokerReplicasInfo,
    GetMetaDataResponseHeader,
    ReplicasInfo,
)
from longboat.protocol.fastjson import dumps
from longboat.remoting import RemotingClient, RemotingError

LOOPBACK = "127.0.0.1"
GROUP = "broker-a"
READER_GROUP = "LONGBOAT_FAILOVER_READER"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


@dataclass
class Member:
    """One child process: how to start it again, and where it logs."""

    name: str
    args: list[str]
    directory: Path
    addr: str
    # What runs the command (`ip netns exec NAME` for a member in a network namespace).
    prefix: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        log = open(self.directory / "out.log", "ab")  # noqa: SIM115 (the child keeps it)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LONGBOAT_")}
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "longboat.cli", *self.args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        log.close()

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def pause(self) -> None:
        """SIGSTOP: alive to the kernel (connections stay open), silent to everyone."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def _configured(
    name: str, command: str, directory: Path, conf: str, addr: str, place: Placement
) -> Member:
    """A member run as `longboat <command> -c FILE`, FILE holding `conf` in its `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{command}.conf"
    path.write_text(conf)
    return Member(name, [command, "-c", str(path)], directory, addr, place.prefix(name))


class Placement(Protocol):
    """Where each member runs: its address, and what runs its command."""

    def host(self, name: str) -> str: ...

    def prefix(self, name: str) -> list[str]: ...


class Loopback:
    """Every member on 127.0.0.1 of this host."""

    def host(self, name: str) -> str:
        return LOOPBACK

    def prefix(self, name: str) -> list[str]:
        return []


@dataclass
class ProcessCluster:
    root: Path
    controllers: list[Member] = field(default_factory=list)
    # Controllers this cluster does not run (another implementation's), asked as its own are.
    foreign_controllers: list[str] = field(default_factory=list)
    namesrv: Member | None = None
    brokers: list[Member] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        root: Path,
        *,
        controllers: int = 1,
        brokers: int = 3,
        heartbeat_timeout_ms: int = 3000,
        placement: Placement | None = None,
        foreign_controllers: list[str] | None = None,
    ) -> ProcessCluster:
        """`placement`: where each member ("controller-n0", "namesrv", "broker-0", ...) runs;
        all on 127.0.0.1 by default.  Ports are probed free on this host's loopback.  With
        `foreign_controllers` (addresses), the brokers follow those and none is started."""
        place = placement or Loopback()
        cluster = cls(root, foreign_controllers=list(foreign_controllers or []))
        if foreign_controllers:
            controllers = 0
        ports = free_controller_ports(controllers, LOOPBACK)
        peers = ";".join(f"n{i}-{place.host(f'controller-n{i}')}:{p}" for i, p in enumerate(ports))
        for i, port in enumerate(ports):
            name = f"controller-n{i}"
            directory = root / name
            conf = (
                f"controllerDLegerPeers={peers}\ncontrollerDLegerSelfId=n{i}\n"
                f"controllerStorePath={directory / 'store'}\nscanNotActiveBrokerInterval=500\n"
            )
            addr = f"{place.host(name)}:{port}"
            cluster.controllers.append(
                _configured(name, "controller", directory, conf, addr, place)
            )
        ns_port = free_port()
        ns_host = place.host("namesrv")
        cluster.namesrv = Member(
            "namesrv",
            ["namesrv", "--host", ns_host, "--port", str(ns_port)],
            root / "namesrv",
            f"{ns_host}:{ns_port}",
            place.prefix("namesrv"),
        )
        controller_addrs = ";".join(
            [m.addr for m in cluster.controllers] or cluster.foreign_controllers
        )
        for i in range(brokers):
            name = f"broker-{i}"
            host = place.host(name)
            port = free_port()
            directory = root / name
            conf = "\n".join(
                [
                    f"brokerName={GROUP}",
                    f"listenPort={port}",
                    f"haListenPort={free_port()}",
                    f"listenHost={host}",
                    f"brokerIP1={host}",
                    f"namesrvAddr={cluster.namesrv.addr}",
                    f"storePathRootDir={directory / 'store'}",
                    "enableControllerMode=true",
                    f"controllerAddr={controller_addrs}",
                    "allAckInSyncStateSet=true",
                    f"controllerHeartBeatTimeoutMills={heartbeat_timeout_ms}",
                    "haMaxTimeSlaveNotCatchup=3000",
                    "haSendHeartbeatInterval=1000",
                    "brokerHeartbeatInterval=500",
                    "syncBrokerMetadataPeriod=500",
                    "slaveSynchronizeInterval=1000",
                    "metricsPort=0",
                    # 16 MiB commit-log files: the 1 GiB default is preallocated.
                    f"mappedFileSizeCommitLog={16 * 1024 * 1024}",
                    "",
                ]
            )
            cluster.brokers.append(
                _configured(name, "broker", directory, conf, f"{host}:{port}", place)
            )
        return cluster

    def start(self) -> None:
        for member in [*self.controllers, self.namesrv, *self.brokers]:
            assert member is not None
            member.start()

    def stop(self) -> None:
        for member in [*self.brokers, self.namesrv, *self.controllers]:
            if member is not None:
                member.stop()

    def member_at(self, addr: str | None) -> Member | None:
        return next((m for m in self.brokers + self.controllers if m.addr == addr), None)

    def master_of(self, info: ReplicasInfo) -> Member:
        """The broker `info` names as its group's master.  AssertionError, naming the address
        and this cluster's brokers, when none is at it (no master elected yet, or one this
        cluster does not run): a test then fails saying so, not on `None` a line later."""
        master = next((m for m in self.brokers if m.addr == info.master_address), None)
        if master is None:
            brokers = ", ".join(f"{m.name} at {m.addr}" for m in self.brokers)
            raise AssertionError(f"the master {info.master_address} is none of {brokers}")
        return master

    # ------------------------------------------------------------------ asking the controllers

    async def _ask(
        self, client: RemotingClient, code: RequestCode, body: bytes = b""
    ) -> RemotingCommand | None:
        addrs = [m.addr for m in self.controllers if m.alive] + self.foreign_controllers
        for addr in addrs:
            try:
                reply = await client.request(addr, RemotingCommand.request(code, {}, body), 2.0)
            except RemotingError:
                continue
            if reply.code == ResponseCode.SUCCESS:
                return reply
        return None

    async def replicas(self, client: RemotingClient) -> ReplicasInfo | None:
        """The group's master, epochs and SyncStateSet, as the leading controller says."""
        reply = await self._ask(client, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, dumps([GROUP]))
        if reply is None:
            return None
        return BrokerReplicasInfo.from_json(reply.body).replicas_info_table.get(GROUP)

    async def leading_controller(
        self, client: RemotingClient, timeout_s: float = 30.0
    ) -> Member | None:
        """The controller that leads, once one does (None after `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            reply = await self._ask(client, RequestCode.CONTROLLER_GET_METADATA_INFO)
            if reply is not None:
                header = GetMetaDataResponseHeader.from_ext(reply.ext_fields)
                leader = self.member_at(header.controllerLeaderAddress)
                if leader is not None:
                    return leader
            await asyncio.sleep(0.2)
        return None

    async def wait_until(
        self, client: RemotingClient, done: Callable[[ReplicasInfo], bool], timeout_s: float = 60.0
    ) -> ReplicasInfo:
        """The group's state once `done(state)`; AssertionError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        info = None
        while time.monotonic() < deadline:
            info = await self.replicas(client)
            if info is not None and done(info):
                return info
            await asyncio.sleep(0.2)
        raise AssertionError(f"the group did not get there within {timeout_s} s: {info}")

    async def wait_for(
        self,
        client: RemotingClient,
        *,
        in_sync: int,
        timeout_s: float = 60.0,
        not_master: str | None = None,
    ) -> ReplicasInfo:
        """The group once it has a master (not `not_master`) and `in_sync` replicas in sync."""
        return await self.wait_until(
            client,
            lambda info: (
                bool(info.master_address)
                and info.master_address != not_master
                and len(info.in_sync_replicas) >= in_sync
            ),
            timeout_s,
        )


@dataclass(frozen=True, slots=True)
class Acked:
    seq: int
    queue_id: int
    queue_offset: int
    broker: str
    acked_at: float


@dataclass
class Verdict:
    acknowledged: int
    lost: list[int]
    duplicates: int
    out_of_order: int
    read: int

    def as_dict(self) -> dict[str, int]:
        return {
            "acknowledged": self.acknowledged,
            "lost": len(self.lost),
            "duplicates": self.duplicates,
            "out_of_order": self.out_of_order,
            "read": self.read,
        }


class SendChecker:
    """Sends `topic` messages numbered 0, 1, ... one after another, recording each SEND_OK."""

    def __init__(self, namesrv: str, topic: str = "FailoverCheck") -> None:
        self.topic = topic
        self.config = ClientConfig([namesrv], client_ip=LOOPBACK, poll_name_server_interval=1.0)
        self.producer = Producer(f"checker-{topic}", config=self.config, send_timeout=15.0)
        self.acked: list[Acked] = []
        self.failed = 0
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self.progress = asyncio.Event()

    async def start(self) -> None:
        await self.producer.start()
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            msg = Message(self.topic, str(seq).encode(), keys=[f"seq-{seq}"])
            try:
                result = await self.producer.send(msg)
            except ClientError:
                self.failed += 1
                await asyncio.sleep(0.05)
            else:
                if result.status is SendStatus.SEND_OK:
                    broker = result.message_queue.broker_name
                    self.acked.append(
                        Acked(
                            seq,
                            result.message_queue.queue_id,
                            result.queue_offset,
                            broker,
                            time.monotonic(),
                        )
                    )
                    self.progress.set()
                else:
                    self.failed += 1
            seq += 1
            await asyncio.sleep(0.005)

    async def wait_acked(self, count: int, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.acked) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"only {len(self.acked)} of {count} sends acknowledged")
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        """Stop sending (the send in flight completes)."""
        self._stop.set()
        if self._task is not None:
            await self._task

    async def close(self) -> None:
        await self.stop()
        await self.producer.shutdown()

    async def read_queues(self) -> dict[int, list[bytes]]:
        """Every body the topic holds now, per queue id, in queue order."""
        reader = QueueReader(config=self.config)
        await reader.start()
        by_queue: dict[int, list[bytes]] = {}
        try:
            for mq in await reader.queues(self.topic):
                offset, end = await reader.min_offset(mq), await reader.max_offset(mq)
                bodies = by_queue.setdefault(mq.queue_id, [])
                while offset < end:
                    result = await reader.pull(mq, offset, group=READER_GROUP, max_msgs=32)
                    if not result.messages:
                        break
                    bodies += [m.body for m in result.messages]
                    offset = result.messages[-1].queue_offset + 1
        finally:
            with contextlib.suppress(ClientError):
                await reader.shutdown()
        return by_queue

    async def read_back(self) -> list[bytes]:
        return [b for bodies in (await self.read_queues()).values() for b in bodies]

    async def verify(self) -> Verdict:
        """Read every queue back and compare with what was acknowledged."""
        by_queue = {q: [int(b) for b in bodies] for q, bodies in (await self.read_queues()).items()}
        present = {s for seqs in by_queue.values() for s in seqs}
        lost = [a.seq for a in self.acked if a.seq not in present]
        duplicates = sum(len(seqs) - len(set(seqs)) for seqs in by_queue.values())
        acked = {a.seq for a in self.acked}
        out_of_order = 0
        for seqs in by_queue.values():
            kept = [s for s in seqs if s in acked]
            out_of_order += sum(1 for a, b in itertools.pairwise(kept) if b <= a)
        return Verdict(len(self.acked), lost, duplicates, out_of_order, len(present))
