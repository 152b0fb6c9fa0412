"""Mistakes said early and plainly: bad topic names, missing topics, no name server."""

from __future__ import annotations

import socket
import time

import pytest

from longboat.client import ClientUsageError, Message, NoRouteError, TransportError
from longboat.client.admin import Admin
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.message import MessageQueue
from longboat.client.producer import Producer
from longboat.client.push import PushConsumer

from .client_e2e import config_for, unique


async def test_create_topic_refuses_a_bad_name_locally(namesrv: str) -> None:
    async with Admin(config=config_for(namesrv)) as admin:
        for bad in ("a b", "x" * 200, "topic/1"):
            with pytest.raises(ClientUsageError, match="cannot create topic") as info:
                await admin.create_topic(bad)
            assert not info.value.retriable
        assert bad not in await admin.topics()


async def test_create_the_topic_first_is_not_retriable(namesrv_no_autocreate: str) -> None:
    async with Producer(unique("pg"), config=config_for(namesrv_no_autocreate)) as producer:
        with pytest.raises(NoRouteError, match="create the topic first") as info:
            await producer.send(Message(unique("Missing"), b"x"))
    assert not info.value.retriable and "(not retriable)" in str(info.value)


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


async def test_push_consumer_start_fails_fast_without_a_name_server() -> None:
    config = config_for(closed_port())
    consumer = PushConsumer(unique("g"), config=config)
    consumer.subscribe("T")
    consumer.register_listener(lambda msgs, ctx: None)
    started = time.monotonic()
    with pytest.raises(TransportError, match=r"cannot start.*lenient_start"):
        await consumer.start()
    assert time.monotonic() - started < config.request_timeout + 5
    # Shut down again by the failed start.
    with pytest.raises(Exception, match="not started"):
        consumer.instance  # noqa: B018

    lenient = PushConsumer(unique("g"), config=config, lenient_start=True)
    lenient.subscribe("T")
    lenient.register_listener(lambda msgs, ctx: None)
    await lenient.start()
    await lenient.shutdown()


BAD_GROUPS = ("bad group", "", "g" * 300)


@pytest.mark.parametrize("group", BAD_GROUPS)
async def test_a_bad_group_is_refused_naming_the_group(namesrv: str, group: str) -> None:
    config = config_for(namesrv)
    with pytest.raises(ClientUsageError, match="consumer group") as lite:
        LitePullConsumer(group, config=config)
    with pytest.raises(ClientUsageError, match="consumer group") as push:
        PushConsumer(group, config=config)
    for refused in (lite.value, push.value):
        assert "%RETRY%" not in str(refused) and "topic" not in str(refused)


def test_a_group_whose_retry_topic_would_be_too_long_is_refused() -> None:
    # Legal as a group (255 at most), but a consuming group also names its retry topic,
    # which a broker refuses over 127 characters.
    with pytest.raises(ClientUsageError, match="120 characters"):
        LitePullConsumer("g" * 121, namesrv_addrs="127.0.0.1:9876")
    LitePullConsumer("g" * 120, namesrv_addrs="127.0.0.1:9876")


async def test_consumers_pointed_at_a_broker_fail_at_start(loopback_cluster) -> None:
    broker_addr = loopback_cluster().broker_addr
    lite = LitePullConsumer(unique("g"), config=config_for(broker_addr))
    lite.subscribe("T")
    with pytest.raises(ClientUsageError, match="looks like a broker, not a name server"):
        await lite.start()
    push = PushConsumer(unique("g"), config=config_for(broker_addr))
    push.subscribe("T")
    push.register_listener(lambda msgs, ctx: None)
    with pytest.raises(ClientUsageError, match="looks like a broker, not a name server"):
        await push.start()
    # Assigned queues, no subscription: the name server is asked all the same.
    assigned = LitePullConsumer(unique("g"), config=config_for(broker_addr))
    assigned.assign([MessageQueue("T", "b", 0)])
    with pytest.raises(ClientUsageError, match="looks like a broker, not a name server"):
        await assigned.start()


async def test_a_lite_pull_consumer_start_fails_fast_without_a_name_server() -> None:
    lite = LitePullConsumer(unique("g"), config=config_for(closed_port()))
    lite.subscribe("T")
    with pytest.raises(TransportError, match="no name server reachable"):
        await lite.start()
