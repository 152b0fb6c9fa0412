"""Mistakes said early and plainly: bad topic names, missing topics, no name server."""

from __future__ import annotations

import socket
import time

import pytest

from longboat.client import ClientUsageError, Message, NoRouteError, TransportError
from longboat.client.admin import Admin
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
