"""A slave copies its master's metadata (RocketMQ's SlaveSynchronize): topic table, consumer
offsets, delay-level progress and group settings, every `slaveSynchronizeInterval`; when the
master is gone it keeps what it copied, and takes the master's word again when it returns.
Real brokers on loopback; the same copy from an Apache RocketMQ master is in
`tests/java/test_slave_sync_rocketmq.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker.conftest import TEST_DELAY_LEVELS
from broker.wire import eventually
from conftest import broker_config
from longboat.broker import BrokerController
from longboat.broker.config import BrokerConfig
from longboat.broker.schedule import DELAY_OFFSET_FILE
from longboat.namesrv import NameServer
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.bodies import SubscriptionGroupConfig, TopicConfig
from longboat.protocol.fastjson import loads
from longboat.protocol.types import PERM_READ_WRITE
from longboat.store import MessageInner

GROUP_NAME = "sync-group"


def config(tmp_path: Path, namesrv: NameServer, directory: str, **options: Any) -> BrokerConfig:
    return broker_config(
        tmp_path / directory,
        namesrv.addr,
        broker_name=GROUP_NAME,
        ha_listen_port=0,
        slave_synchronize_interval=100,
        register_name_server_period=100,
        message_delay_level=TEST_DELAY_LEVELS,
        **options,
    )


async def test_a_slave_copies_offsets_groups_delay_progress_and_topics(
    namesrv: NameServer, tmp_path: Path
) -> None:
    master = BrokerController(config(tmp_path, namesrv, "master"))
    await master.start()
    slave = BrokerController(config(tmp_path, namesrv, "slave", broker_role="SLAVE", broker_id=1))
    await slave.start()
    try:
        master.topics.create_topic(TopicConfig("Orders", 2, 2, PERM_READ_WRITE))
        master.subscription_groups.put(SubscriptionGroupConfig("billing", retry_max_times=2))
        master.offsets.commit("billing", "Orders", 0, 42)
        master.offsets.commit("billing", "Orders", 1, 7)
        # A delayed message delivered: the delay level's progress moves to 1.
        msg = MessageInner("Orders", 0, b"later", {"DELAY": "1"})
        await master.put_message(msg)
        await eventually(
            lambda: master.store.max_offset("Orders", 0) == 1, "the delayed message delivered"
        )

        def copied() -> bool:
            return (
                slave.offsets.queue_offsets("billing", "Orders") == {0: 42, 1: 7}
                and slave.subscription_groups.get("billing").retry_max_times == 2
                and slave.topics.get("Orders") is not None
                and (slave.store.config.config_dir / DELAY_OFFSET_FILE).exists()
            )

        await eventually(copied, "the slave's copy of its master's tables")
        assert slave.subscription_groups.wrapper().data_version == (
            master.subscription_groups.wrapper().data_version
        )
        await eventually(
            lambda: (
                delay_progress(slave) == delay_progress(master) and delay_progress(slave)["1"] == 1
            ),
            "the delay progress file copied",
        )

        # The master goes: the slave keeps what it copied, and takes a consumer's commit
        # (as RocketMQ's slave does: a Java consumer commits there while the master is gone).
        await master.stop()
        sync = slave.slave_sync
        assert sync is not None
        await eventually(lambda: sync.master_addr is None, "the master gone")
        reply = await slave.client.request(
            slave.broker_addr,
            RemotingCommand.request(
                RequestCode.UPDATE_CONSUMER_OFFSET,
                {
                    "consumerGroup": "billing",
                    "topic": "Orders",
                    "queueId": "0",
                    "commitOffset": "50",
                },
            ),
            5,
        )
        assert reply.code == 0
        assert slave.offsets.queue_offsets("billing", "Orders") == {0: 50, 1: 7}
        assert slave.subscription_groups.get("billing").retry_max_times == 2

        # Back: the master's offsets win again (a consumer commits to the master).
        master = BrokerController(config(tmp_path, namesrv, "master"))
        await master.start()
        master.offsets.commit("billing", "Orders", 0, 60)
        await eventually(
            lambda: slave.offsets.queue_offsets("billing", "Orders") == {0: 60, 1: 7},
            "the returned master's offsets copied",
        )
    finally:
        await slave.stop()
        await master.stop()


def delay_progress(broker: BrokerController) -> dict[str, int]:
    path = broker.store.config.config_dir / DELAY_OFFSET_FILE
    if not path.exists():
        return {}
    table: dict[str, int] = loads(path.read_bytes()).get("offsetTable") or {}
    return table
