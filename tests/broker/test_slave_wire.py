"""A slave copies its master's metadata (RocketMQ's SlaveSynchronize): topic table, consumer
offsets, delay-level progress and group settings, every `slaveSynchronizeInterval`; when the
master is gone it keeps what it copied, and takes the master's word again when it returns.
It serves pulls by RocketMQ's rules (`broker/core/pull_suggest.py`).  Real brokers on loopback; the
same copy from an Apache RocketMQ master is in `tests/java/test_slave_sync_rocketmq.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker.conftest import TEST_DELAY_LEVELS
from broker.wire import Wire, eventually, pulled, records, sent
from conftest import broker_config
from longboat.broker import BrokerController
from longboat.broker.config import BrokerConfig
from longboat.broker.services.delay_schedule import DELAY_OFFSET_FILE
from longboat.namesrv import NameServer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
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


async def test_a_slave_serves_pulls_suggests_its_master_and_keeps_offsets_as_they_are(
    namesrv: NameServer, tmp_path: Path
) -> None:
    """With slaveReadEnable and accessMessageInMemoryMaxRatio 0 (any read that found messages
    counts as behind), the master sends a reader to the slave, and the slave sends a caught-up
    reader back; the slave neither stores the offset a pull carries nor moves a reader that
    is ahead of it."""
    options = {"slave_read_enable": True, "access_message_in_memory_max_ratio": 0}
    master = BrokerController(config(tmp_path, namesrv, "master", **options))
    await master.start()
    slave = BrokerController(
        config(tmp_path, namesrv, "slave", broker_role="SLAVE", broker_id=1, **options)
    )
    await slave.start()
    to_master, to_slave = Wire(master.broker_addr), Wire(slave.broker_addr)
    try:
        master.topics.create_topic(TopicConfig("Reads", 1, 1, PERM_READ_WRITE))
        for i in range(10):
            sent(await to_master.send("Reads", f"m{i}".encode()))
        await eventually(
            lambda: slave.store.max_offset("Reads", 0) == 10 and bool(slave.topics.get("Reads")),
            "the slave's copy",
        )
        far = await to_master.pull("Reads", 0, 0, max_nums=1)
        assert pulled(far).suggestWhichBrokerId == 1

        served = await to_slave.pull("Reads", 0, 0, commit_offset=4)
        assert [m.body for m in records(served)] == [f"m{i}".encode() for i in range(10)]
        assert slave.offsets.query("g", "Reads", 0) is None  # a slave keeps its master's
        caught_up = await to_slave.pull("Reads", 0, 10)
        assert caught_up.code == ResponseCode.PULL_NOT_FOUND
        assert pulled(caught_up).suggestWhichBrokerId == 0

        ahead = await to_slave.pull("Reads", 0, 12)  # past what the slave holds
        assert ahead.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        assert (pulled(ahead).suggestWhichBrokerId, pulled(ahead).nextBeginOffset) == (0, 12)
        moved = await to_master.pull("Reads", 0, 12)  # a master corrects it, as before
        assert moved.code == ResponseCode.PULL_OFFSET_MOVED
    finally:
        await to_master.close()
        await to_slave.close()
        await slave.stop()
        await master.stop()
