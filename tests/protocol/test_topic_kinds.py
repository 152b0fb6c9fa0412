"""What `longboat topic list`, `longboat cluster` and the dashboard call a topic, as a table:
a user's, a group's retry or dead-letter topic, or one the brokers keep for themselves."""

from __future__ import annotations

import pytest

from longboat.protocol.topic_names import topic_kind

# What a name server registers as topics besides real ones: its clusters' and brokers' names.
RESERVED = {"DefaultCluster", "broker-a"}


@pytest.mark.parametrize(
    ("topic", "kind"),
    [
        ("Orders", "normal"),
        ("%RETRY%readers", "retry"),
        ("%DLQ%readers", "dlq"),
        ("TBW102", "system"),
        ("rmq_sys_wheel_timer", "system"),
        ("DefaultCluster", "system"),
        ("broker-a", "system"),
        # RocketMQ's brokers create their cluster's request-reply topic on start.
        ("DefaultCluster_REPLY_TOPIC", "system"),
        # A user's topic that only ends the same way.
        ("Orders_REPLY_TOPIC", "normal"),
    ],
)
def test_topic_kind(topic: str, kind: str) -> None:
    assert topic_kind(topic, RESERVED) == kind
