"""Apache RocketMQ 5.3.3's `mqadmin` (`MQAdminStartup`, unchanged) against Longboat in
controller mode: `getControllerMetaData` and `getSyncStateSet` ask a Longboat controller,
`getBrokerEpoch` asks each broker of the group (found through the name server) for its epoch
entries.  The group is real processes: one controller and two brokers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from longboat.remoting import RemotingClient
from longboat.testing.failover import GROUP, ProcessCluster, SendChecker
from peers.rocketmq5 import run_mqadmin5

pytestmark = pytest.mark.java


async def test_mqadmin5_reads_the_controller_and_the_brokers_epochs(
    java_peers: None, tmp_path: Path
) -> None:
    cluster = ProcessCluster.build(tmp_path, controllers=1, brokers=2)
    cluster.start()
    client = RemotingClient()
    try:
        await cluster.wait_for(client, in_sync=2)
        assert cluster.namesrv is not None
        checker = SendChecker(cluster.namesrv.addr)
        await checker.start()
        try:
            await checker.wait_acked(20)
        finally:
            await checker.close()
        # Every acknowledged send is on both (allAckInSyncStateSet): one log end for both.
        info = await cluster.wait_for(client, in_sync=2)
        controller = cluster.controllers[0].addr
        commands = [
            ["getControllerMetaData", "-a", controller],
            ["getSyncStateSet", "-a", controller, "-b", GROUP],
            ["getBrokerEpoch", "-b", GROUP],
        ]
        events = run_mqadmin5(
            namesrv=cluster.namesrv.addr, commands=json.dumps(commands), timeout=120
        )
    finally:
        await client.close()
        cluster.stop()
    out: dict[str, str] = {}
    for event in events:
        if event["event"] == "command":
            assert event["stderr"] == "", event
            out[event["args"][0]] = event["stdout"]

    meta = fields(out["getControllerMetaData"])
    assert meta["ControllerLeaderAddress"] == controller
    assert meta["ControllerGroup"] == "DefaultControllerGroup"

    sync = fields(out["getSyncStateSet"])
    assert sync["brokerName"] == GROUP
    assert sync["MasterBrokerId"] == str(info.master_broker_id)
    assert sync["MasterAddr"] == info.master_address
    assert sync["MasterEpoch"] == str(info.master_epoch)
    assert sync["SyncStateSetEpoch"] == str(info.sync_state_set_epoch)
    assert sync["SyncStateSetNums"] == "2"
    replicas = re.findall(
        r"InSyncReplica:\s*ReplicaIdentity\{brokerName='([^']*)', brokerId=(\d+), "
        r"brokerAddress='([^']*)', alive=(\w+)\}",
        out["getSyncStateSet"],
    )
    assert sorted(replicas) == sorted(
        (GROUP, str(r.broker_id), r.broker_address, "true") for r in info.in_sync_replicas
    )

    # One block per broker: its address and id, and its one term from offset 0 to its end.
    epochs = re.findall(
        r"#brokerAddr\t(\S+)\n#brokerId\t(\d+)\n"
        r"#Epoch: EpochEntry\{epoch=(\d+), startOffset=(\d+), endOffset=(\d+)\}",
        out["getBrokerEpoch"],
    )
    assert {(addr, int(bid)) for addr, bid, *_ in epochs} == {
        (r.broker_address, r.broker_id) for r in info.in_sync_replicas
    }
    assert {(int(e), int(start)) for _, _, e, start, _ in epochs} == {(info.master_epoch, 0)}
    ends = {int(end) for *_, end in epochs}
    assert len(ends) == 1 and ends.pop() > 0


def fields(text: str) -> dict[str, str]:
    """mqadmin's `#Name<TAB>value` lines."""
    pairs = (line[1:].split("\t", 1) for line in text.splitlines() if line.startswith("#"))
    return {p[0]: p[1].strip() for p in pairs if len(p) == 2}
