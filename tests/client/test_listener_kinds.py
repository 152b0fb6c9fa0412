"""A listener registered as the wrong kind (#19 item 6): refused at registration when its
annotation says so, else a usage error at its first result — never an orderly queue suspended
forever — and nothing it was given is committed, so a corrected consumer gets it all."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from longboat.client import ClientUsageError, sync
from longboat.client.message import Message
from longboat.client.push import (
    ConcurrentContext,
    ConsumeFrom,
    ConsumeResult,
    ListenerKindError,
    OrderlyContext,
    OrderlyResult,
    PushConsumer,
)
from longboat.protocol.message import MessageExt

from .client_e2e import config_for, unique
from .push_support import Deliveries, create_topic, send

BODIES = ["a", "b", "c"]


def consumer_for(namesrv: str, group: str, topic: str) -> PushConsumer:
    consumer = PushConsumer(
        group,
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        broker_suspend_timeout=1.0,
        pull_timeout=5.0,
        suspend_current_queue_time=0.05,
    )
    consumer.subscribe(topic)
    return consumer


def test_a_listener_annotated_with_the_other_result_is_refused_at_registration() -> None:
    def concurrent(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
        return ConsumeResult.SUCCESS

    def orderly(msgs: list[MessageExt], ctx: OrderlyContext) -> OrderlyResult:
        return OrderlyResult.SUCCESS

    # Each `type: ignore` below is mypy catching the mistake before it runs: this module is
    # checked with warn_unused_ignores (pyproject.toml), so a registration that stopped being
    # typed by kind would fail `make lint` as an unused ignore.
    consumer = PushConsumer(unique("g"))
    with pytest.raises(ListenerKindError, match="register it with register_concurrent"):
        consumer.register_orderly(concurrent)  # type: ignore[arg-type]
    with pytest.raises(ListenerKindError, match="register it with register_orderly"):
        consumer.register_concurrent(orderly)  # type: ignore[arg-type]
    with pytest.raises(ListenerKindError, match="register it with register_orderly"):
        consumer.register_listener(orderly)  # type: ignore[arg-type]
    with pytest.raises(ListenerKindError, match="register it with register_concurrent"):
        consumer.register_listener(concurrent, orderly=True)  # type: ignore[arg-type]
    known_at_run_time = bool(consumer.group)
    with pytest.raises(ListenerKindError, match="register it with register_concurrent"):
        consumer.register_listener(concurrent, orderly=known_at_run_time)  # type: ignore[arg-type]
    consumer.register_concurrent(concurrent)
    consumer.register_orderly(orderly)
    consumer.register_listener(orderly, orderly=True)

    blocking = sync.PushConsumer(unique("g"))
    with pytest.raises(ListenerKindError, match="register it with register_concurrent"):
        blocking.register_orderly(concurrent)  # type: ignore[arg-type]
    with pytest.raises(ListenerKindError, match="register it with register_orderly"):
        blocking.register_listener(orderly)  # type: ignore[arg-type]
    blocking.register_concurrent(concurrent)
    blocking.register_listener(orderly, orderly=True)


@pytest.mark.parametrize("orderly", [True, False], ids=["orderly", "concurrent"])
async def test_the_other_kinds_result_stops_the_consumer_at_the_first_call(
    namesrv: str, orderly: bool
) -> None:
    topic, group = await create_topic(namesrv, 1, order=orderly), unique("g")
    await send(namesrv, topic, BODIES)
    calls = 0
    wrong: Any = ConsumeResult.SUCCESS if orderly else OrderlyResult.SUCCESS

    def mistaken(msgs: list[MessageExt], ctx: Any):
        nonlocal calls
        calls += 1
        return wrong

    consumer = consumer_for(namesrv, group, topic)
    consumer.register_listener(mistaken, orderly=orderly)
    async with consumer:
        async with asyncio.timeout(20):
            while consumer.listener_error is None:
                await asyncio.sleep(0.05)
        at_error = calls
        await asyncio.sleep(1.0)  # an orderly queue would be retried every 50 ms here
        # Orderly: the one call. Concurrent: the calls already running on the pool's threads
        # when the first result was read, then none.
        assert calls == at_error
        assert calls == 1 if orderly else calls <= len(BODIES)
    assert isinstance(consumer.listener_error, ListenerKindError)
    fix = "register_concurrent" if orderly else "register_orderly"
    assert fix in str(consumer.listener_error)

    # Nothing was committed: the same group, corrected, gets every message.
    deliveries = Deliveries()
    corrected = consumer_for(namesrv, group, topic)

    def right(msgs: list[MessageExt], ctx: Any) -> None:
        deliveries.record("c", ctx.mq, msgs)

    corrected.register_listener(right, orderly=orderly)
    async with corrected:
        await deliveries.wait_for_bodies(set(BODIES), timeout=20)
    assert corrected.listener_error is None


def test_the_blocking_facade_stops_and_shows_the_error_too(namesrv: str) -> None:
    topic, group = unique("T"), unique("g")
    with sync.Admin(config=config_for(namesrv)) as admin:
        admin.create_topic(topic, queue_nums=1, order=True)
    with sync.Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for body in BODIES:
            producer.send(Message(topic, body.encode()))
    calls = 0

    def mistaken(msgs: list[MessageExt], ctx: Any):
        nonlocal calls
        calls += 1
        return ConsumeResult.SUCCESS

    consumer = sync.PushConsumer(
        group,
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        suspend_current_queue_time=0.05,
    )
    consumer.subscribe(topic)
    consumer.register_listener(mistaken, orderly=True)
    with consumer:
        deadline = time.monotonic() + 20
        while consumer.listener_error is None:
            assert time.monotonic() < deadline, "no ListenerKindError"
            time.sleep(0.05)
        time.sleep(1.0)  # suspended every 50 ms, the queue would be retried 20 times here
        assert calls == 1
    assert isinstance(consumer.listener_error, ClientUsageError)
    assert "register_concurrent" in str(consumer.listener_error)
