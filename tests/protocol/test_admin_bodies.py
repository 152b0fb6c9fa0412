"""Admin bodies the broker serves: subscription group settings, the topic table wrapper."""

from __future__ import annotations

from longboat.protocol.bodies import (
    DataVersion,
    RegisterBrokerBody,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
)


def test_subscription_group_config_round_trip_and_java_defaults() -> None:
    cfg = SubscriptionGroupConfig.from_json(
        b'{"groupName":"g1","retryMaxTimes":3,"retryQueueNums":2,"consumeEnable":false}'
    )
    assert (cfg.group_name, cfg.retry_max_times, cfg.retry_queue_nums) == ("g1", 3, 2)
    assert not cfg.consume_enable and cfg.consume_broadcast_enable
    assert SubscriptionGroupConfig.from_json(cfg.to_json()) == cfg


def test_topic_config_wrapper_round_trip_and_inside_register_body() -> None:
    wrapper = TopicConfigSerializeWrapper(
        {"T": TopicConfig("T", 2, 3, perm=6)}, DataVersion(timestamp=5, counter=7)
    )
    assert TopicConfigSerializeWrapper.from_json(wrapper.to_json()) == wrapper
    body = RegisterBrokerBody(wrapper.topic_config_table, wrapper.data_version)
    again = RegisterBrokerBody.from_json(body.to_json())
    assert (again.topic_config_table, again.data_version) == (
        wrapper.topic_config_table,
        wrapper.data_version,
    )
