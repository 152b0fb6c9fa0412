"""Assignment by the broker (QUERY_ASSIGNMENT 400) in a cluster of two real brokers serving one
topic, asked of one of them with the bare protocol client: as RocketMQ 5.3's broker, it shares
the topic's queues of every broker in the route it looked up at the name server (PULL: the
strategy's share of all of them; POP: queue -1 of each broker; a retry topic: PULL, over every
broker's retry queues), looks the route up again every `loadBalancePollNameServerInterval`, and
keeps what it had when the name server stops answering, while a topic whose route it never got
gets its own queues."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import broker_config
from longboat.broker import BrokerController
from longboat.namesrv import NameServer
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.assignment_bodies import (
    MessageRequestMode,
    MessageRequestModeBody,
    QueryAssignmentRequest,
)
from longboat.protocol.bodies import TopicConfig

from .wire import Wire, eventually

TOPIC = "ClusterAssignT"
GROUP = "cluster-assign-g"
QUEUES = 2
# How often the brokers look the routes they share up again (RocketMQ's default: 30 s).
POLL_MS = 200


async def assignment(wire: Wire, client_id: str, topic: str = TOPIC) -> dict[str, Any]:
    """The answer: {"mode": [...], "queues": sorted (broker, queue id)} or {} (no valid one)."""
    found = await wire.assignments(QueryAssignmentRequest(topic, GROUP, client_id, "AVG"))
    if found is None:
        return {}
    queues = [(a["messageQueue"]["brokerName"], a["messageQueue"]["queueId"]) for a in found]
    return {"mode": sorted({a["mode"] for a in found}), "queues": sorted(queues)}


async def serve_topic(broker: BrokerController, topic: str) -> None:
    """Create `topic` on `broker` and wait until the name server has its route."""
    broker.topics.create_topic(TopicConfig(topic, QUEUES, QUEUES))
    await broker.registered()


@pytest.fixture
async def brokers(tmp_path: Path, namesrv: NameServer) -> AsyncIterator[list[BrokerController]]:
    """broker-a and broker-b, registered with one name server, both serving TOPIC."""
    running: list[BrokerController] = []
    try:
        for name in ("broker-a", "broker-b"):
            config = broker_config(
                tmp_path / name,
                namesrv.addr,
                broker_name=name,
                load_balance_poll_name_server_interval=POLL_MS,
            )
            broker = BrokerController(config)
            await broker.start()
            running.append(broker)
            await serve_topic(broker, TOPIC)
        yield running
    finally:
        for broker in reversed(running):
            await broker.stop()


@pytest.fixture
async def wire(brokers: list[BrokerController]) -> AsyncIterator[Wire]:
    """A connection to broker-a, the one every question goes to."""
    connection = Wire(brokers[0].broker_addr)
    yield connection
    await connection.close()


BOTH = [(broker, queue) for broker in ("broker-a", "broker-b") for queue in range(QUEUES)]


async def test_pull_shares_the_queues_of_every_broker(
    brokers: list[BrokerController], wire: Wire
) -> None:
    await wire.heartbeat("c1", GROUP, TOPIC)
    assert await assignment(wire, "c1") == {"mode": ["PULL"], "queues": BOTH}
    # A second member (its heartbeat reached broker-a): AVG halves the four queues, so the
    # member asking broker-a is given broker-b's.
    second = Wire(brokers[0].broker_addr)
    try:
        await second.heartbeat("c2", GROUP, TOPIC)
        assert await assignment(wire, "c1") == {"mode": ["PULL"], "queues": BOTH[:2]}
        assert await assignment(second, "c2") == {"mode": ["PULL"], "queues": BOTH[2:]}
    finally:
        await second.close()
    # A topic no broker and no name server knows: no valid answer.
    assert await assignment(wire, "c1", topic="NoSuchTopic") == {}


async def test_pop_gives_queue_minus_one_of_every_broker(
    brokers: list[BrokerController], wire: Wire
) -> None:
    other = Wire(brokers[1].broker_addr)
    try:
        for connection in (wire, other):
            await connection.heartbeat("c1", GROUP, TOPIC)
        await brokers[1].registered()  # the group's retry topic, created by the heartbeat
        body = MessageRequestModeBody(TOPIC, GROUP, MessageRequestMode.POP).to_json()
        response = await wire.call(RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert await assignment(wire, "c1") == {
            "mode": ["POP"],
            "queues": [("broker-a", -1), ("broker-b", -1)],
        }
        # The group's retry topic is pulled, from every broker's retry queue.
        retry = await assignment(wire, "c1", topic=f"%RETRY%{GROUP}")
        assert retry == {"mode": ["PULL"], "queues": [("broker-a", 0), ("broker-b", 0)]}
    finally:
        await other.close()


async def test_a_broker_joining_the_route_is_shared_after_a_refresh(
    brokers: list[BrokerController], wire: Wire
) -> None:
    topic = "JoinedLaterT"
    await serve_topic(brokers[0], topic)
    await wire.heartbeat("c1", GROUP, topic)
    only_a = {"mode": ["PULL"], "queues": [("broker-a", 0), ("broker-a", 1)]}
    assert await assignment(wire, "c1", topic) == only_a
    await serve_topic(brokers[1], topic)

    async def both_shared() -> bool:
        return (await assignment(wire, "c1", topic)).get("queues") == BOTH

    await eventually(both_shared, "broker-b's queues in broker-a's answer", poll=0.05)


async def test_without_a_name_server_the_route_is_kept_or_the_broker_shares_its_own(
    brokers: list[BrokerController],
    namesrv: NameServer,
    wire: Wire,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="longboat.broker.services.topic_routes")
    await wire.heartbeat("c1", GROUP, TOPIC)
    assert await assignment(wire, "c1") == {"mode": ["PULL"], "queues": BOTH}
    await namesrv.stop()
    # The route looked up before is kept through a refresh no name server answered.
    await eventually(
        lambda: any(f"route of {TOPIC} not refreshed" in r.getMessage() for r in caplog.records),
        "a refresh that found no name server",
    )
    assert await assignment(wire, "c1") == {"mode": ["PULL"], "queues": BOTH}
    # A topic the broker created since, whose route no name server gives: its own queues.
    topic = "CreatedAloneT"
    brokers[0].topics.create_topic(TopicConfig(topic, QUEUES, QUEUES))
    await wire.heartbeat("c1", GROUP, topic)
    alone = await assignment(wire, "c1", topic)
    assert alone == {"mode": ["PULL"], "queues": [("broker-a", 0), ("broker-a", 1)]}
