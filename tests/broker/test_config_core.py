"""broker.conf as RocketMQ operators write it: Java properties in RocketMQ's key spellings, then
environment and command-line overrides; unknown keys warned about, bad values refused with the
key and where it came from."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from longboat.broker import BrokerConfig, ConfigError
from longboat.store import FlushDiskType

BROKER_CONF = """\
# A broker.conf written for RocketMQ 4.9
brokerClusterName = ProdCluster
brokerName=broker-b
brokerId : 0
listenPort 10921
namesrvAddr=10.0.0.1:9876;10.0.0.2:9876
storePathRootDir=/var/lib/longboat/store
flushDiskType=SYNC_FLUSH
brokerIP1=10.0.0.7
longPollingEnable=false
shortPollingTimeMills=500
messageDelayLevel=1s 5s 10s
autoCreateTopicEnable=false
defaultTopicQueueNums=16
maxMessageSize=1048576
fileReservedTime=48
deleteWhen=03
enableDLegerCommitLog=false
"""


def test_a_rocketmq_broker_conf_loads_with_overrides_in_order(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(BROKER_CONF)
    env = {"LONGBOAT_LISTEN_PORT": "10931", "NAMESRV_ADDR": "10.0.0.3:9876"}
    with caplog.at_level(logging.WARNING, "longboat.broker.config"):
        config = BrokerConfig.load(conf, env=env, overrides=[("listenPort", "10941")])
    assert config.broker_cluster_name == "ProdCluster"
    assert (config.broker_name, config.broker_id) == ("broker-b", 0)
    assert config.listen_port == 10941  # file < environment < command line
    assert config.namesrv_addrs == ["10.0.0.3:9876"]  # RocketMQ's own variable
    assert config.store_path_root_dir == Path("/var/lib/longboat/store")
    assert config.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert config.advertised_ip == "10.0.0.7"
    assert (config.long_polling_enable, config.short_polling_time_mills) == (False, 500)
    assert config.delay_levels.max_level == 3
    assert config.auto_create_topic_enable is False
    assert config.default_topic_queue_nums == 16
    assert config.max_message_size == 1_048_576
    assert (config.file_reserved_time, config.delete_when) == (48.0, "03")
    # enableDLegerCommitLog is RocketMQ's (DLedger), not ours: warned about, not fatal.
    assert "enableDLegerCommitLog" in caplog.text
    assert config.broker_role == "ASYNC_MASTER"
    assert "broker.conf:18" in caplog.text


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("listenPort=ten", "listenPort"),
        ("listenPort=70000", "listenPort"),
        ("longPollingEnable=yes", "longPollingEnable"),
        ("flushDiskType=SOMETIMES", "flushDiskType"),
        ("deleteWhen=25", "deleteWhen"),
        ("namesrvAddr=localhost", "namesrvAddr"),
        ("brokerIP1=broker.example.com", "brokerIP1"),
        ("messageDelayLevel=1s 5x", "5x"),
        ("defaultTopicQueueNums=0", "defaultTopicQueueNums"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key(tmp_path: Path, line: str, named: str) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b\n{line}\n")
    with pytest.raises(ConfigError, match=named):
        BrokerConfig.load(conf, env={})


def test_bad_environment_and_command_line_values_say_where_they_came_from() -> None:
    with pytest.raises(ConfigError, match=r"LONGBOAT_LISTEN_PORT"):
        BrokerConfig.load(env={"LONGBOAT_LISTEN_PORT": "x"})
    with pytest.raises(ConfigError, match="command line"):
        BrokerConfig.load(env={}, overrides=[("maxMessageSize", "big")])
    with pytest.raises(ConfigError, match="cannot read"):
        BrokerConfig.load(Path("/nonexistent/broker.conf"), env={})


def test_a_config_cannot_change_under_its_users_a_change_is_a_new_validated_config() -> None:
    config = BrokerConfig.load(env={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.listen_port = 10999  # type: ignore[misc]
    faster = config.updated(transactionCheckInterval="1000", listen_port=10999)
    assert (faster.transaction_check_interval, faster.listen_port) == (1000, 10999)
    assert (config.transaction_check_interval, config.listen_port) == (60_000, 10911)
    with pytest.raises(ConfigError, match="listenPort"):
        config.updated(listenPort="70000")
    with pytest.raises(ConfigError, match="unknown broker setting 'noSuchKey'"):
        config.updated(noSuchKey="1")
    # Built directly, it is checked as when loaded.
    with pytest.raises(ConfigError, match="deleteWhen"):
        BrokerConfig(delete_when="25")
