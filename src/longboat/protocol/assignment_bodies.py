"""The bodies of assignment by the broker (RocketMQ 5): QUERY_ASSIGNMENT 400 asked by a client
that lets the broker assign (the Java client's `setClientRebalance(false)`), and
SET_MESSAGE_REQUEST_MODE 401 by which an operator (`mqadmin setConsumeMode`) makes a
(topic, group) consume by PULL or by POP.

The mode travels with each assignment: RocketMQ's client pulls a queue assigned in PULL mode
and pops one assigned in POP mode, so the mode an operator set, not the client, decides
whether a `setClientRebalance(false)` consumer pops.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from longboat.protocol import fastjson
from longboat.protocol.json_body import JsonDocument, json_object
from longboat.protocol.types import MessageQueue


class MessageRequestMode(StrEnum):
    PULL = "PULL"
    POP = "POP"


@dataclass(frozen=True, slots=True)
class MessageRequestModeBody(JsonDocument):
    """SET_MESSAGE_REQUEST_MODE's body (RocketMQ's SetMessageRequestModeRequestBody), also the
    value the broker keeps per (topic, group).  `pop_share_queue_num`: a POP consumer also
    pops the queues of the next N members in the sorted id list; 0 or less (or at least the
    number of the others) pops every queue."""

    _what: ClassVar[str] = "message request mode"

    topic: str
    consumer_group: str
    mode: MessageRequestMode = MessageRequestMode.PULL
    pop_share_queue_num: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "consumerGroup": self.consumer_group,
            "mode": self.mode.value,
            "popShareQueueNum": self.pop_share_queue_num,
            "topic": self.topic,
        }

    @classmethod
    def from_dict(cls, d: Any) -> MessageRequestModeBody:
        d = json_object(d, cls._what)
        return cls(
            topic=str(d["topic"]),
            consumer_group=str(d["consumerGroup"]),
            mode=MessageRequestMode(str(d.get("mode") or "PULL")),
            pop_share_queue_num=int(d.get("popShareQueueNum", 0)),
        )


@dataclass(frozen=True, slots=True)
class QueryAssignmentRequest(JsonDocument):
    """QUERY_ASSIGNMENT's body: who asks for which topic, with which allocation strategy
    (`AVG`, `AVG_BY_CIRCLE`: the names RocketMQ's broker knows)."""

    _what: ClassVar[str] = "assignment query"

    topic: str
    consumer_group: str
    client_id: str
    strategy_name: str = "AVG"
    message_model: str = "CLUSTERING"

    def to_dict(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "messageModel": self.message_model,
            "strategyName": self.strategy_name,
            "topic": self.topic,
        }

    @classmethod
    def from_dict(cls, d: Any) -> QueryAssignmentRequest:
        d = json_object(d, cls._what)
        return cls(
            topic=str(d["topic"]),
            consumer_group=str(d.get("consumerGroup") or ""),
            client_id=str(d.get("clientId") or ""),
            strategy_name=str(d.get("strategyName") or "AVG"),
            message_model=str(d.get("messageModel") or "CLUSTERING"),
        )


def encode_assignments(queues: set[MessageQueue] | None, mode: MessageRequestMode) -> bytes:
    """QUERY_ASSIGNMENT's answer.  None (no valid answer: unknown topic, no member, unknown
    strategy) is an object without the set, which RocketMQ's client reads as "keep what you
    have"; an empty set tells it to drop every queue."""
    if queues is None:
        return fastjson.dumps({})
    assignments = [
        {"messageQueue": mq.to_dict(), "mode": mode.value, "attachments": {}}
        for mq in sorted(queues, key=lambda q: (q.topic, q.broker_name, q.queue_id))
    ]
    return fastjson.dumps({"messageQueueAssignments": assignments})
