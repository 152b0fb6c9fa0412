"""The broker refuses sends to names it reserves and property strings a separator broke, with
codes no client retries (RocketMQ's TopicValidator on send, and a send never makes up a
consumer group); a group's retry topic takes sends once the group's consumer is known."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from conftest import Cluster
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData

from .wire import Wire, send_header

TOPIC = "ReservedSends"


async def test_sends_to_reserved_names_are_refused_as_the_senders_error(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    config = cluster.config
    w = Wire(cluster.broker_addr)
    try:
        reserved = (
            "SCHEDULE_TOPIC_XXXX",
            "TBW102",
            "%DLQ%g",
            config.broker_cluster_name,
            config.broker_name,
        )
        for topic in reserved:
            response = await w.send(topic, b"x")
            assert response.code == ResponseCode.INVALID_PARAMETER, topic
            assert "reserved" in (response.remark or ""), topic
        assert cluster.broker.topics.get("%DLQ%g") is None
        assert cluster.broker.store.max_offset("TBW102", 0) <= 0
        # A plain topic is still auto-created by the same send.
        assert (await w.send(TOPIC, b"x")).code == ResponseCode.SUCCESS
    finally:
        await w.close()


async def test_a_retry_topic_takes_sends_only_once_its_group_is_known(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    try:
        response = await w.send("%RETRY%foo", b"x")
        assert response.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        assert "foo" in (response.remark or "")
        assert cluster.broker.topics.get("%RETRY%foo") is None  # no phantom group
        heartbeat = HeartbeatData(
            "client-1",
            consumer_data_set=[
                ConsumerData("foo", subscription_data_set=[SubscriptionData.of(TOPIC, "*", 1)])
            ],
        )
        answer = await w.call(RequestCode.HEART_BEAT, body=heartbeat.to_json())
        assert answer.code == ResponseCode.SUCCESS
        # The consumer's own send-back fallback: a plain send to its retry topic.
        assert (await w.send("%RETRY%foo", b"x")).code == ResponseCode.SUCCESS
    finally:
        await w.close()


async def test_a_property_string_broken_by_a_separator_is_refused(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    try:
        assert (await w.send(TOPIC, b"first")).code == ResponseCode.SUCCESS
        for broken in (
            "na\x02me\x01value",  # a name holding the pair separator
            "name\x01va\x01lue",  # a value holding the name-value separator
            "TAGS\x01t\x02na\x01me\x01v\x02",
        ):
            header = dataclasses.replace(send_header(TOPIC, 0, {}), properties=broken)
            response = await w.call(RequestCode.SEND_MESSAGE_V2, header, b"x")
            assert response.code == ResponseCode.MESSAGE_ILLEGAL, broken
            assert "separator" in (response.remark or "")
        assert cluster.broker.store.max_offset(TOPIC, 0) == 1
        # A trailing separator (ali-ons, 3.x Java) is not a broken string.
        header = dataclasses.replace(send_header(TOPIC, 0, {}), properties="TAGS\x01t\x02")
        ok = await w.call(RequestCode.SEND_MESSAGE_V2, header, b"x")
        assert ok.code == ResponseCode.SUCCESS
    finally:
        await w.close()
