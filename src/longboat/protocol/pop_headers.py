"""Pop consumption over remoting (RIP-19): the headers of POP_MESSAGE (200050), ACK_MESSAGE
(200051), CHANGE_MESSAGE_INVISIBLETIME (200053), NOTIFICATION (200054), POLLING_INFO
(200055), the BATCH_ACK_MESSAGE (200151) body, and
the checkpoint string (`extraInfo`) a client carries from a pop to its ack.

A pop's answer names its checkpoint in the response header (popTime, invisibleTime,
reviveQid) and, per queue, the first offset and the offsets it delivered
(`startOffsetInfo`, `msgOffsetInfo`: `"<retry> <queueId> <value>"` joined by `;`).  The
client builds each message's `POP_CK` property from them unless the broker already set it:

    extraInfo = "<ckQueueOffset> <popTime> <invisibleTime> <reviveQid> <retry> <brokerName>
                 <queueId> <queueOffset>"

and sends it back in ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME with the queue and offset.
`<retry>` is 0 for a normal topic, 1 for `%RETRY%`, 2 for the v2 pop retry topics.

An orderly pop's answer (request header `order`) adds `orderCountInfo`: how often each message
was delivered before, `"<retry> qo<queueId>%<queueOffset> <count>"` per message and, from
RocketMQ's broker, `"<retry> <queueId> <count>"` per queue (the least of its messages, for
older clients), joined by `;`.  RocketMQ's broker re-reads an orderly queue from its consumer
offset, so the stored message's reconsume times say 0: the client takes the count from here.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson

from longboat.protocol.errors import ProtocolError
from longboat.protocol.header_fields import Header, JavaInt
from longboat.protocol.headers import GroupQueueHeader
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX

NORMAL_TOPIC_MARK = "0"
RETRY_TOPIC_MARK = "1"


@dataclass(frozen=True, slots=True)
class PopMessageRequestHeader(GroupQueueHeader):
    maxMsgNums: JavaInt
    invisibleTime: int
    pollTime: int
    bornTime: int
    initMode: JavaInt
    expType: str | None = None
    exp: str | None = None
    order: bool | None = None
    attemptId: str | None = None


@dataclass(frozen=True, slots=True)
class CheckpointResponseHeader(Header):
    """The checkpoint's time, invisibility and revive queue: CHANGE_MESSAGE_INVISIBLETIME's
    answer, and the opening of POP_MESSAGE's."""

    popTime: int
    invisibleTime: int
    reviveQid: JavaInt


ChangeInvisibleTimeResponseHeader = CheckpointResponseHeader


@dataclass(frozen=True, slots=True)
class PopMessageResponseHeader(CheckpointResponseHeader):
    restNum: int
    startOffsetInfo: str | None = None
    msgOffsetInfo: str | None = None
    orderCountInfo: str | None = None


@dataclass(frozen=True, slots=True)
class AckMessageRequestHeader(GroupQueueHeader):
    """ACK_MESSAGE's header, and the opening of CHANGE_MESSAGE_INVISIBLETIME's."""

    extraInfo: str
    offset: int


@dataclass(frozen=True, slots=True)
class ChangeInvisibleTimeRequestHeader(AckMessageRequestHeader):
    invisibleTime: int


@dataclass(frozen=True, slots=True)
class NotificationRequestHeader(GroupQueueHeader):
    pollTime: int
    bornTime: int
    order: bool | None = None
    attemptId: str | None = None


@dataclass(frozen=True, slots=True)
class NotificationResponseHeader(Header):
    hasMsg: bool
    pollingFull: bool = False


PollingInfoRequestHeader = GroupQueueHeader


@dataclass(frozen=True, slots=True)
class PollingInfoResponseHeader(Header):
    pollingNum: JavaInt


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    """A message's pop checkpoint, as `POP_CK` and an ack's `extraInfo` carry it."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int

    def __str__(self) -> str:
        return " ".join(
            str(v)
            for v in (
                self.ck_queue_offset,
                self.pop_time,
                self.invisible_time,
                self.revive_qid,
                self.retry,
                self.broker_name,
                self.queue_id,
                self.queue_offset,
            )
        )

    @classmethod
    def parse(cls, text: str) -> ExtraInfo:
        """ProtocolError when `text` is not a checkpoint (the sender's error); a checkpoint
        without its queue offset (older clients) reads it as -1."""
        parts = text.split(" ")
        if len(parts) < 7:
            raise ProtocolError(f"extraInfo {text!r} has {len(parts)} fields, not 7 or 8")
        try:
            return cls(
                int(parts[0]),
                int(parts[1]),
                int(parts[2]),
                int(parts[3]),
                parts[4],
                parts[5],
                int(parts[6]),
                int(parts[7]) if len(parts) > 7 else -1,
            )
        except ValueError:
            raise ProtocolError(f"extraInfo {text!r} is not a pop checkpoint") from None


def topic_mark(topic: str) -> str:
    """The `<retry>` field of a checkpoint for `topic`."""
    return RETRY_TOPIC_MARK if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else NORMAL_TOPIC_MARK


def queue_info(topic: str, values: dict[int, str]) -> str:
    """`startOffsetInfo` / `msgOffsetInfo`: per queue id, its value."""
    mark = topic_mark(topic)
    return ";".join(f"{mark} {queue_id} {value}" for queue_id, value in values.items())


def parse_queue_info(text: str | None) -> dict[tuple[str, int], str]:
    """`startOffsetInfo` / `msgOffsetInfo` read back: (`<retry>` mark, queue id) -> value.
    ProtocolError when an entry is not `"<retry> <queueId> <value>"`."""
    found: dict[tuple[str, int], str] = {}
    for entry in filter(None, (text or "").split(";")):
        parts = entry.split(" ")
        if len(parts) != 3 or not parts[1].lstrip("-").isdigit():
            raise ProtocolError(f"queue info entry {entry!r} is not '<retry> <queueId> <value>'")
        found[parts[0], int(parts[1])] = parts[2]
    return found


def order_count_key(queue_id: int, queue_offset: int) -> str:
    """One message's key in `orderCountInfo`."""
    return f"qo{queue_id}%{queue_offset}"


def order_count_info(topic: str, counts: list[tuple[int, int, int]]) -> str:
    """`orderCountInfo` for (queue id, queue offset, earlier deliveries) of each message."""
    mark = topic_mark(topic)
    return ";".join(f"{mark} {order_count_key(q, o)} {n}" for q, o, n in counts)


def parse_order_count_info(text: str | None) -> dict[tuple[str, str], int]:
    """`orderCountInfo` read back: (`<retry>` mark, `order_count_key` or queue id) -> count.
    ProtocolError when an entry is not `"<retry> <key> <count>"`."""
    found: dict[tuple[str, str], int] = {}
    for entry in filter(None, (text or "").split(";")):
        parts = entry.split(" ")
        if len(parts) != 3 or not parts[2].isdigit():
            raise ProtocolError(f"order count entry {entry!r} is not '<retry> <key> <count>'")
        found[parts[0], parts[1]] = int(parts[2])
    return found


@dataclass(frozen=True, slots=True)
class BatchAck:
    """One entry of a BATCH_ACK_MESSAGE body: the offsets `start_offset + i` for each bit i set."""

    consumer_group: str
    topic: str
    retry: str
    start_offset: int
    queue_id: int
    revive_qid: int
    pop_time: int
    invisible_time: int
    offsets: list[int]


def parse_batch_ack_body(body: bytes) -> list[BatchAck]:
    """`{"brokerName": ..., "acks": [{"c", "t", "r", "so", "q", "rq", "pt", "it", "b"}]}`;
    the bit set `b` is `BitSet.toByteArray()` in base64 (fastjson's byte[]): bit i is bit
    i % 8 of byte i // 8."""
    try:
        doc = orjson.loads(body)
        return [_batch_ack(entry) for entry in doc.get("acks") or []]
    except (
        orjson.JSONDecodeError,
        binascii.Error,
        AttributeError,
        KeyError,
        TypeError,
        ValueError,
    ) as exc:
        raise ProtocolError(f"bad BATCH_ACK_MESSAGE body: {exc}") from None


def _field(entry: dict[str, Any], short: str, long: str) -> Any:
    return entry[short] if short in entry else entry[long]


def _batch_ack(entry: dict[str, Any]) -> BatchAck:
    start = int(_field(entry, "so", "startOffset"))
    bits = base64.b64decode(_field(entry, "b", "bitSet") or "")
    offsets = [
        start + i * 8 + bit for i, byte in enumerate(bits) for bit in range(8) if byte >> bit & 1
    ]
    return BatchAck(
        str(_field(entry, "c", "consumerGroup")),
        str(_field(entry, "t", "topic")),
        str(_field(entry, "r", "retry")),
        start,
        int(_field(entry, "q", "queueId")),
        int(_field(entry, "rq", "reviveQueueId")),
        int(_field(entry, "pt", "popTime")),
        int(_field(entry, "it", "invisibleTime")),
        offsets,
    )
