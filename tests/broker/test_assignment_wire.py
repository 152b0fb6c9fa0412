"""Assignment by the broker (QUERY_ASSIGNMENT 400, SET_MESSAGE_REQUEST_MODE 401) against the
real broker, with the bare protocol client, as RocketMQ 5.3 answers: PULL and the strategy's
share of the queues unless an operator set the (topic, group) to POP; POP gives the whole
topic (queue -1) or, with popShareQueueNum, a member's share and its followers'; the setting
survives a restart; a retry topic and an unknown topic are refused."""

from __future__ import annotations

from typing import Any

from longboat.broker import BrokerController
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.assignment_bodies import (
    MessageRequestMode,
    MessageRequestModeBody,
    QueryAssignmentRequest,
)
from longboat.protocol.bodies import TopicConfig

from .wire import Wire

TOPIC = "AssignT"
GROUP = "assign-g"
QUEUES = 4


async def assignment(
    wire: Wire, client_id: str, *, topic: str = TOPIC, strategy: str = "AVG"
) -> dict[str, Any]:
    """The answer: {"mode": ..., "queues": sorted queue ids} or {} (no valid answer)."""
    found = await wire.assignments(QueryAssignmentRequest(topic, GROUP, client_id, strategy))
    if found is None:
        return {}
    return {
        "mode": sorted({a["mode"] for a in found}),
        "queues": sorted(a["messageQueue"]["queueId"] for a in found),
    }


async def set_mode(wire: Wire, topic: str, mode: MessageRequestMode, share: int = 0) -> Any:
    body = MessageRequestModeBody(topic, GROUP, mode, share).to_json()
    return await wire.call(RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)


async def members(broker: BrokerController, ids: list[str]) -> list[Wire]:
    broker.topics.create_topic(TopicConfig(TOPIC, QUEUES, QUEUES))
    wires = [Wire(broker.broker_addr) for _ in ids]
    for wire, client_id in zip(wires, ids, strict=True):
        await wire.heartbeat(client_id, GROUP, TOPIC)
    return wires


async def test_pull_by_default_shared_by_the_strategy(broker: BrokerController) -> None:
    wires = await members(broker, ["c1", "c2"])
    try:
        assert await assignment(wires[0], "c1") == {"mode": ["PULL"], "queues": [0, 1]}
        assert await assignment(wires[1], "c2") == {"mode": ["PULL"], "queues": [2, 3]}
        by_circle = await assignment(wires[0], "c1", strategy="AVG_BY_CIRCLE")
        assert by_circle == {"mode": ["PULL"], "queues": [0, 2]}
        # No valid answer (the client keeps what it has): an unknown strategy or topic.
        assert await assignment(wires[0], "c1", strategy="CONSISTENT_HASH") == {}
        assert await assignment(wires[0], "c1", topic="NoSuchTopic") == {}
    finally:
        for wire in wires:
            await wire.close()


async def test_pop_once_set_and_kept_across_a_restart(broker: BrokerController) -> None:
    (wire,) = await members(broker, ["c1"])
    try:
        assert (await set_mode(wire, TOPIC, MessageRequestMode.POP)).code == ResponseCode.SUCCESS
        assert await assignment(wire, "c1") == {"mode": ["POP"], "queues": [-1]}
        # A group's retry topic is always pulled, and its mode cannot be set.
        retry = f"%RETRY%{GROUP}"
        refused = await set_mode(wire, retry, MessageRequestMode.POP)
        assert (refused.code, refused.remark) == (
            ResponseCode.NO_PERMISSION,
            "retry topic is not allowed to set mode",
        )
        unknown = await set_mode(wire, "NoSuchTopic", MessageRequestMode.POP)
        assert (unknown.code, unknown.remark) == (
            ResponseCode.TOPIC_NOT_EXIST,
            "topic[NoSuchTopic] not exist",
        )
    finally:
        await wire.close()
    config = broker.config
    await broker.stop()
    again = BrokerController(config)
    await again.start()
    try:
        (wire,) = await members(again, ["c1"])
        assert await assignment(wire, "c1") == {"mode": ["POP"], "queues": [-1]}
        # Set back to PULL: the strategy's share again.
        assert (await set_mode(wire, TOPIC, MessageRequestMode.PULL)).code == ResponseCode.SUCCESS
        assert await assignment(wire, "c1") == {"mode": ["PULL"], "queues": [0, 1, 2, 3]}
        await wire.close()
    finally:
        await again.stop()


async def test_pop_share_queue_num_adds_the_followers_shares(broker: BrokerController) -> None:
    wires = await members(broker, ["c1", "c2", "c3"])
    try:
        await set_mode(wires[0], TOPIC, MessageRequestMode.POP, share=1)
        # AVG over 4 queues and 3 members: c1 [0, 1], c2 [2], c3 [3]; each adds the next's.
        assert await assignment(wires[0], "c1") == {"mode": ["POP"], "queues": [0, 1, 2]}
        assert await assignment(wires[2], "c3") == {"mode": ["POP"], "queues": [0, 1, 3]}
        # popShareQueueNum at least the number of the others: the whole topic.
        await set_mode(wires[0], TOPIC, MessageRequestMode.POP, share=2)
        assert await assignment(wires[1], "c2") == {"mode": ["POP"], "queues": [-1]}
    finally:
        for wire in wires:
            await wire.close()
