"""Controller mode across implementations, both ways, with Apache RocketMQ 5.3.3 unchanged.

* Its broker (`BrokerStartup`, `enableControllerMode=true`) under a Longboat controller: it
  gets its broker id from the controller, registers, is elected master, and takes sends that
  Longboat's client finds through a Longboat name server.
* Longboat brokers under its controller (embedded in its name server,
  `enableControllerInNamesrv=true`): elected, the master SIGKILLed under steady sends, a new
  one elected, the old one back as a slave; the checker's verdict at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.support import assert_clean, checked_cluster, finish, kill_master, restart_in_sync
from longboat.remoting import RemotingClient
from longboat.testing.failover import GROUP, ProcessCluster, SendChecker
from peers.rocketmq import discard, free_port, start_namesrv
from peers.rocketmq5 import SERVER5_DIR, start_rocketmq5_broker

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
            discard(java)
        cluster.stop()
    assert_clean(verdict)
    assert {a.broker for a in checker.acked} == {GROUP}


async def test_longboat_brokers_fail_over_under_a_rocketmq5_controller(
    java_peers: None, tmp_path: Path
) -> None:
    home = tmp_path / "rocketmq5"
    peer_port = free_port()
    namesrv, _ = start_namesrv(
        home,
        SERVER5_DIR,
        options={
            "enableControllerInNamesrv": "true",
            "controllerDLegerGroup": "group1",
            "controllerDLegerPeers": f"n0-127.0.0.1:{peer_port}",
            "controllerDLegerSelfId": "n0",
            "controllerStorePath": home / "controller",
            "scanNotActiveBrokerInterval": 500,
            "notifyBrokerRoleChanged": "true",
        },
    )
    # As in RocketMQ 5.3.3, brokers reach the embedded controller at its peer address.
    controller = f"127.0.0.1:{peer_port}"
    try:
        async with checked_cluster(
            tmp_path / "longboat", controllers=0, brokers=2, foreign_controllers=[controller]
        ) as (cluster, client, checker, first):
            old, _ = await kill_master(cluster, client, checker, first)
            await restart_in_sync(cluster, client, old, 2)
            verdict = await finish(checker)
    finally:
        namesrv.kill()
    assert_clean(verdict)
