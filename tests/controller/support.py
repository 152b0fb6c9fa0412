"""Ports and requests for controller tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from longboat.controller.config import free_controller_ports
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.controller import ReplicasInfo
from longboat.protocol.header_fields import Header
from longboat.remoting import RemotingClient
from longboat.testing.failover import Member, Placement, ProcessCluster, SendChecker, Verdict

TIMEOUT_S = 10.0


controller_ports = free_controller_ports


def peers_text(ports: list[int]) -> str:
    return ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(ports))


async def call(
    client: RemotingClient,
    addr: str,
    code: RequestCode,
    header: Header | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    cmd = RemotingCommand.request(code, header.to_ext() if header else {}, body)
    return await client.request(addr, cmd, TIMEOUT_S)


async def eventually(check: Callable[[], object], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout_s} s")
        await asyncio.sleep(0.1)


@asynccontextmanager
async def checked_cluster(
    root: Path,
    *,
    controllers: int,
    brokers: int,
    placement: Placement | None = None,
    foreign_controllers: list[str] | None = None,
) -> AsyncIterator[tuple[ProcessCluster, RemotingClient, SendChecker, ReplicasInfo]]:
    """A started cluster of processes whose group has every broker in sync, a client to ask
    its controllers, and a checker sending steadily; all stopped at the end."""
    cluster = ProcessCluster.build(
        root,
        controllers=controllers,
        brokers=brokers,
        placement=placement,
        foreign_controllers=foreign_controllers,
    )
    cluster.start()
    client = RemotingClient()
    assert cluster.namesrv is not None
    checker = SendChecker(cluster.namesrv.addr)
    try:
        first = await cluster.wait_for(client, in_sync=brokers)
        await checker.start()
        await checker.wait_acked(100)
        yield cluster, client, checker, first
    finally:
        await checker.close()
        await client.close()
        cluster.stop()


def assert_clean(verdict: Verdict) -> None:
    print("checker:", verdict.as_dict())
    assert verdict.acknowledged > 0
    assert verdict.lost == []
    assert verdict.duplicates == 0
    assert verdict.out_of_order == 0


async def finish(checker: SendChecker) -> Verdict:
    """A last 100 acknowledged sends, then stop sending and read everything back."""
    await checker.wait_acked(len(checker.acked) + 100)
    await checker.stop()
    return await checker.verify()


async def restart_in_sync(
    cluster: ProcessCluster, client: RemotingClient, member: Member, brokers: int
) -> None:
    """SIGKILL `member` (if it runs), start it again on its store, and wait until all
    `brokers` are back in the SyncStateSet."""
    member.kill()
    member.start()
    await cluster.wait_for(client, in_sync=brokers)


async def kill_master(
    cluster: ProcessCluster, client: RemotingClient, checker: SendChecker, current: ReplicasInfo
) -> tuple[Member, ReplicasInfo]:
    """SIGKILL the master of `current`; returns it and the group once another broker is
    master at a higher epoch and has acknowledged 100 more sends."""
    old = cluster.master_of(current)
    old.kill()
    acked_before = len(checker.acked)
    new = await cluster.wait_for(client, in_sync=1, not_master=current.master_address)
    assert new.master_epoch > current.master_epoch
    await checker.wait_acked(acked_before + 100)
    return old, new
