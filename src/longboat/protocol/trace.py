"""Message trace records, as RocketMQ 4.x clients write them to the trace topic.

A trace message's body is one or more records; a record is its fields joined by the byte 0x01
and ended by 0x02 (Java's `TraceDataEncoder`).  Its keys are the traced messages' ids and
keys, so `QUERY_MESSAGE` by a message id on the trace topic finds every record about it:
that is how `mqadmin QueryMsgTraceById` reads them, and how `longboat message trace` does.

The four kinds and their fields, in order (the first field names the kind):

* Pub: time, region, group, topic, msgId, tags, keys, storeHost, bodyLength, costMs,
  msgType, offsetMsgId, success;
* SubBefore: time, region, group, requestId, msgId, retryTimes, keys;
* SubAfter: requestId, msgId, costMs, success, keys, contextCode, time, group;
* EndTransaction: time, region, group, topic, msgId, tags, keys, storeHost, msgType,
  transactionId, transactionState, fromTransactionCheck.

Java writes a missing string as "null" (String.valueOf), and so do we; reading turns it back
into None.  A SubBefore and its SubAfter share a request id: one delivery attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any, NamedTuple

CONTENT_SEPARATOR = "\x01"
FIELD_SEPARATOR = "\x02"
DEFAULT_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
# Java's `TraceConstants.GROUP_NAME_PREFIX`: the group the trace writer sends as.
TRACE_PRODUCER_GROUP = "_INNER_TRACE_PRODUCER"
_NULL = "null"
# Java's `MixAll.DEFAULT_TRACE_REGION_ID`: the region of a record whose message names none.
DEFAULT_REGION = "DefaultRegion"


class TraceType(Enum):
    PUB = "Pub"
    SUB_BEFORE = "SubBefore"
    SUB_AFTER = "SubAfter"
    END_TRANSACTION = "EndTransaction"


class MessageType(IntEnum):
    """Java's `MessageType`, written by its ordinal."""

    NORMAL = 0
    TRANS_HALF = 1
    TRANS_COMMIT = 2
    DELAY = 3


@dataclass(slots=True)
class TraceRecord:
    """One record; the fields a kind does not carry keep their defaults.  Not frozen: one
    is built per message traced, and a frozen dataclass's `__init__` costs a call per field."""

    type: TraceType
    msg_id: str
    timestamp: int = 0
    region_id: str | None = None
    group: str | None = None
    topic: str | None = None
    tags: str | None = None
    keys: str | None = None
    store_host: str | None = None
    body_length: int = 0
    cost_ms: int = 0
    msg_type: MessageType = MessageType.NORMAL
    offset_msg_id: str | None = None
    success: bool = True
    request_id: str | None = None
    retry_times: int = 0
    context_code: int = 0
    transaction_id: str | None = None
    transaction_state: str | None = None
    from_transaction_check: bool = False


_PUB, _SUB_BEFORE, _SUB_AFTER = TraceType.PUB, TraceType.SUB_BEFORE, TraceType.SUB_AFTER


def _s(value: str | None) -> str:
    return _NULL if value is None else value


def _b(value: bool) -> str:
    return "true" if value else "false"


def encode_record(r: TraceRecord) -> str:
    """The record as Java writes it, separators included (one f-string per kind: it runs
    once per message sent or consumed with traces on)."""
    kind = r.type
    if kind is _PUB:
        return (
            f"Pub\x01{r.timestamp}\x01{_s(r.region_id)}\x01{_s(r.group)}\x01{_s(r.topic)}"
            f"\x01{r.msg_id}\x01{_s(r.tags)}\x01{_s(r.keys)}\x01{_s(r.store_host)}"
            f"\x01{r.body_length}\x01{r.cost_ms}\x01{int(r.msg_type)}"
            f"\x01{_s(r.offset_msg_id)}\x01{_b(r.success)}\x02"
        )
    if kind is _SUB_BEFORE:
        return (
            f"SubBefore\x01{r.timestamp}\x01{_s(r.region_id)}\x01{_s(r.group)}"
            f"\x01{_s(r.request_id)}\x01{r.msg_id}\x01{r.retry_times}\x01{_s(r.keys)}\x02"
        )
    if kind is _SUB_AFTER:
        return (
            f"SubAfter\x01{_s(r.request_id)}\x01{r.msg_id}\x01{r.cost_ms}\x01{_b(r.success)}"
            f"\x01{_s(r.keys)}\x01{r.context_code}\x01{r.timestamp}\x01{_s(r.group)}\x02"
        )
    return (
        f"EndTransaction\x01{r.timestamp}\x01{_s(r.region_id)}\x01{_s(r.group)}"
        f"\x01{_s(r.topic)}\x01{r.msg_id}\x01{_s(r.tags)}\x01{_s(r.keys)}"
        f"\x01{_s(r.store_host)}\x01{int(r.msg_type)}\x01{_s(r.transaction_id)}"
        f"\x01{_s(r.transaction_state)}\x01{_b(r.from_transaction_check)}\x02"
    )


def _opt(text: str) -> str | None:
    return None if text == _NULL else text


def _bool(text: str) -> bool:
    return text.lower() == "true"


def _context_fields(f: list[str]) -> dict[str, Any]:
    """The fields Pub, EndTransaction and SubBefore share, at the same places."""
    return {
        "msg_id": f[5],
        "timestamp": int(f[1]),
        "region_id": _opt(f[2]),
        "group": _opt(f[3]),
        "keys": _opt(f[7]),
    }


def _sent_fields(f: list[str]) -> dict[str, Any]:
    """The fields Pub and EndTransaction share, at the same places."""
    return {
        **_context_fields(f),
        "topic": _opt(f[4]),
        "tags": _opt(f[6]),
        "store_host": _opt(f[8]),
    }


def _pub_fields(f: list[str]) -> dict[str, Any]:
    # Writers before 4.9 leave out offsetMsgId: success is then field 12.
    return {
        **_sent_fields(f),
        "body_length": int(f[9]),
        "cost_ms": int(f[10]),
        "msg_type": MessageType(int(f[11])),
        "offset_msg_id": _opt(f[12]) if len(f) >= 14 else None,
        "success": _bool(f[13] if len(f) >= 14 else f[12]),
    }


def _sub_before_fields(f: list[str]) -> dict[str, Any]:
    return {**_context_fields(f), "request_id": _opt(f[4]), "retry_times": int(f[6])}


def _sub_after_fields(f: list[str]) -> dict[str, Any]:
    # Older writers stop after keys (no context code) or after it (no timestamp, group).
    return {
        "msg_id": f[2],
        "request_id": _opt(f[1]),
        "cost_ms": int(f[3]),
        "success": _bool(f[4]),
        "keys": _opt(f[5]),
        "context_code": int(f[6]) if len(f) >= 7 and f[6] else 0,
        "timestamp": int(f[7]) if len(f) >= 9 else 0,
        "group": _opt(f[8]) if len(f) >= 9 else None,
    }


def _end_transaction_fields(f: list[str]) -> dict[str, Any]:
    return {
        **_sent_fields(f),
        "msg_type": MessageType(int(f[9])),
        "transaction_id": _opt(f[10]),
        "transaction_state": _opt(f[11]),
        "from_transaction_check": _bool(f[12]),
    }


class _Kind(NamedTuple):
    type: TraceType
    min_fields: int  # a shorter record of the kind is skipped
    fields: Callable[[list[str]], dict[str, Any]]


# Each record kind the body may hold, by its first field.
_KINDS = {
    "Pub": _Kind(TraceType.PUB, 13, _pub_fields),
    "SubBefore": _Kind(TraceType.SUB_BEFORE, 8, _sub_before_fields),
    "SubAfter": _Kind(TraceType.SUB_AFTER, 6, _sub_after_fields),
    "EndTransaction": _Kind(TraceType.END_TRANSACTION, 13, _end_transaction_fields),
}


def decode_records(body: str) -> list[TraceRecord]:
    """Every record of a trace message's body (Java's `decoderFromTraceDataString`: older
    writers' shorter Pub and SubAfter records are read too; unknown kinds are skipped)."""
    records = []
    for text in body.split(FIELD_SEPARATOR):
        f = text.split(CONTENT_SEPARATOR)
        kind = _KINDS.get(f[0])
        if kind is not None and len(f) >= kind.min_fields:
            records.append(TraceRecord(kind.type, **kind.fields(f)))
    return records
