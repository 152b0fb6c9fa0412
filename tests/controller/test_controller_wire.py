"""Three controllers over the wire: a broker group registered through codes 1001-1013, and
the state surviving the loss of the leading controller."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from longboat.controller.config import ControllerConfig
from longboat.controller.server import ControllerServer
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    BrokerReplicasInfo,
    ElectMasterRequestHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerRequestHeader,
    SyncStateSet,
)
from longboat.protocol.fastjson import dumps
from longboat.remoting import RemotingClient

from .support import call, controller_ports, eventually, peers_text

HEARTBEAT_TIMEOUT_MS = 1500


@pytest.fixture
async def controllers(tmp_path: Path) -> AsyncIterator[list[ControllerServer]]:
    ports = controller_ports(3)
    servers = []
    for i in range(3):
        config = ControllerConfig.from_properties(
            {
                "controllerDLegerPeers": peers_text(ports),
                "controllerDLegerSelfId": f"n{i}",
                "controllerStorePath": str(tmp_path / f"n{i}"),
                "scanNotActiveBrokerInterval": "200",
            }
        )
        servers.append(ControllerServer(config))
    await asyncio.gather(*(s.start() for s in servers))
    try:
        yield servers
    finally:
        await asyncio.gather(*(s.stop() for s in servers))


def leader_of(servers: list[ControllerServer]) -> ControllerServer | None:
    leading = [s for s in servers if s.controller.is_leader]
    return leading[0] if len(leading) == 1 else None


async def join(client: RemotingClient, addr: str, port: int) -> int:
    """What a broker does on start: get an id, apply for it, register."""
    answer = await call(
        client,
        addr,
        RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
        GetNextBrokerIdRequestHeader("c", "broker-a"),
    )
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    broker_id = GetNextBrokerIdResponseHeader.from_ext(answer.ext_fields).nextBrokerId
    assert broker_id is not None
    code = f"127.0.0.1:{port};{broker_id}"
    applied = await call(
        client,
        addr,
        RequestCode.CONTROLLER_APPLY_BROKER_ID,
        ApplyBrokerIdRequestHeader("c", "broker-a", broker_id, code),
    )
    assert applied.code == ResponseCode.SUCCESS, applied.remark
    registered = await call(
        client,
        addr,
        RequestCode.CONTROLLER_REGISTER_BROKER,
        RegisterBrokerToControllerRequestHeader("c", "broker-a", broker_id, f"127.0.0.1:{port}"),
    )
    assert registered.code == ResponseCode.SUCCESS, registered.remark
    return broker_id


async def beat(client: RemotingClient, addrs: list[str], broker_id: int, max_offset: int) -> None:
    header = BrokerHeartbeatRequestHeader(
        "c",
        f"127.0.0.1:{10910 + broker_id}",
        "broker-a",
        broker_id,
        1,
        max_offset,
        heartbeatTimeoutMills=HEARTBEAT_TIMEOUT_MS,
    )
    for addr in addrs:
        try:
            await call(client, addr, RequestCode.BROKER_HEARTBEAT, header)
        except Exception:  # a stopped controller
            pass


async def test_a_group_is_elected_and_survives_the_leading_controllers_loss(
    controllers: list[ControllerServer],
) -> None:
    await eventually(lambda: leader_of(controllers) is not None)
    leader = leader_of(controllers)
    assert leader is not None
    addr = leader.addr
    follower = next(s for s in controllers if s is not leader)
    # A follower learns who leads from the leader's first append after the election.
    await eventually(lambda: follower.controller.leader_addr() == addr)
    client = RemotingClient()
    try:
        # A follower names the leader and refuses changes.
        meta = await call(client, follower.addr, RequestCode.CONTROLLER_GET_METADATA_INFO)
        header = GetMetaDataResponseHeader.from_ext(meta.ext_fields)
        assert (header.controllerLeaderAddress, header.isLeader) == (addr, False)
        refused = await call(
            client,
            follower.addr,
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
            GetNextBrokerIdRequestHeader("c", "broker-a"),
        )
        assert refused.code == ResponseCode.CONTROLLER_NOT_LEADER

        ids = [await join(client, addr, 10911 + i) for i in range(3)]
        assert ids == [1, 2, 3]
        everyone = [s.addr for s in controllers]
        for bid in ids:
            await beat(client, everyone, bid, 100 * bid)
        elected = await call(
            client,
            addr,
            RequestCode.CONTROLLER_ELECT_MASTER,
            ElectMasterRequestHeader("c", "broker-a", 1),
        )
        assert elected.code == ResponseCode.SUCCESS, elected.remark
        grown = await call(
            client,
            addr,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
            AlterSyncStateSetRequestHeader("broker-a", 1, 1),
            SyncStateSet(frozenset({1, 2, 3}), 1).to_json(),
        )
        assert grown.code == ResponseCode.SUCCESS, grown.remark

        # The leading controller goes away; the others elect a leader with the same table.
        await leader.stop()
        survivors = [s for s in controllers if s is not leader]
        await eventually(lambda: leader_of(survivors) is not None)
        new_leader = leader_of(survivors)
        assert new_leader is not None
        addr = new_leader.addr
        info = await call(
            client,
            addr,
            RequestCode.CONTROLLER_GET_REPLICA_INFO,
            GetReplicaInfoRequestHeader("broker-a"),
        )
        got = GetReplicaInfoResponseHeader.from_ext(info.ext_fields)
        assert (got.masterBrokerId, got.masterEpoch) == (1, 1)
        assert SyncStateSet.from_json(info.body) == SyncStateSet(frozenset({1, 2, 3}), 2)

        # The master stops heartbeating: the new leader elects the longest in-sync log.
        addrs = [s.addr for s in survivors]

        async def heartbeats() -> None:
            while True:
                await beat(client, addrs, 2, 200)
                await beat(client, addrs, 3, 300)
                await asyncio.sleep(0.2)

        beating = asyncio.ensure_future(heartbeats())
        try:

            async def master() -> tuple[int | None, int | None]:
                answer = await call(
                    client,
                    addr,
                    RequestCode.CONTROLLER_GET_REPLICA_INFO,
                    GetReplicaInfoRequestHeader("broker-a"),
                )
                h = GetReplicaInfoResponseHeader.from_ext(answer.ext_fields)
                return h.masterBrokerId, h.masterEpoch

            for _ in range(300):
                if await master() == (3, 2):
                    break
                await asyncio.sleep(0.1)
            assert await master() == (3, 2)
            data = await call(
                client, addr, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=dumps(["broker-a"])
            )
            group = BrokerReplicasInfo.from_json(data.body).replicas_info_table["broker-a"]
            assert [r.broker_id for r in group.in_sync_replicas] == [3]
            assert {r.broker_id: r.alive for r in group.not_in_sync_replicas} == {1: False, 2: True}
        finally:
            beating.cancel()
            await asyncio.gather(beating, return_exceptions=True)
    finally:
        await client.close()
