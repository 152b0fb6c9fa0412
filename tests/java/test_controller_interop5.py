"""Apache RocketMQ 5.3.3's broker (`BrokerStartup`, unchanged, `enableControllerMode=true`)
under a Longboat controller: it gets its broker id from the controller, registers, is elected
master, and takes sends that Longboat's client finds through a Longboat name server."""

from __future__ import annotations

from pathlib import Path

import pytest

from longboat.remoting import RemotingClient
from longboat.testing.failover import GROUP, ProcessCluster, SendChecker
from peers.rocketmq5 import start_rocketmq5_broker

pytestmark = pytest.mark.java


async def test_a_rocketmq5_broker_is_elected_master_by_a_longboat_controller(
    java_peers: None, tmp_path: Path
) -> None:
    cluster = ProcessCluster.build(tmp_path / "longboat", controllers=1, brokers=0)
    cluster.start()
    assert cluster.namesrv is not None
    client = RemotingClient()
    java = None
    try:
        java = start_rocketmq5_broker(
            tmp_path / "rocketmq5",
            namesrv_addr=cluster.namesrv.addr,
            broker_options={
                "brokerName": GROUP,
                "enableControllerMode": "true",
                "controllerAddr": cluster.controllers[0].addr,
                "allAckInSyncStateSet": "true",
                "syncBrokerMetadataPeriod": 500,
                "brokerHeartbeatInterval": 500,
                "controllerHeartBeatTimeoutMills": 3000,
            },
        )
        info = await cluster.wait_for(client, in_sync=1)
        assert info.master_address == java.broker_addr
        assert info.master_broker_id == 1 and info.master_epoch == 1
        checker = SendChecker(cluster.namesrv.addr)
        await checker.start()
        try:
            await checker.wait_acked(50)
            await checker.stop()
            verdict = await checker.verify()
        finally:
            await checker.close()
    finally:
        await client.close()
        if java is not None:
            java.stop()
        cluster.stop()
    print("checker:", verdict.as_dict())
    assert verdict.lost == [] and verdict.duplicates == 0 and verdict.out_of_order == 0
    assert {a.broker for a in checker.acked} == {GROUP}
