"""JSON bodies that are one list or one table: consumer ids, topics, groups, key-value tables,
queue locks, offset tables, consume and topic stats.  The structured bodies (routes, broker
registration, heartbeats) are `bodies`, whose readers' checks these share: a body of the
wrong shape is the peer's fault, a `ProtocolError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from longboat.protocol import fastjson
from longboat.protocol.json_body import json_object, load_json_object, malformed
from longboat.protocol.types import MessageQueue

# --------------------------------------------------------------------------- small bodies


def encode_consumer_id_list(ids: list[str]) -> bytes:
    return fastjson.dumps({"consumerIdList": ids})


def decode_consumer_id_list(data: bytes) -> list[str]:
    d = load_json_object(data, "consumer id list")
    with malformed("consumer id list"):
        return [str(x) for x in d.get("consumerIdList") or []]


@dataclass(slots=True)
class LockBatchRequest:
    """LOCK_BATCH_MQ and UNLOCK_BATCH_MQ request body."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue] = field(default_factory=list)

    def to_json(self) -> bytes:
        return fastjson.dumps(
            {
                "clientId": self.client_id,
                "consumerGroup": self.consumer_group,
                "mqSet": [mq.to_dict() for mq in self.mq_set],
            }
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> LockBatchRequest:
        d = load_json_object(data, "lock batch request")
        with malformed("lock batch request"):
            return cls(
                consumer_group=str(d["consumerGroup"]),
                client_id=str(d["clientId"]),
                mq_set=[MessageQueue.from_dict(m) for m in d.get("mqSet") or []],
            )


def encode_lock_batch_response(locked: list[MessageQueue]) -> bytes:
    return fastjson.dumps({"lockOKMQSet": [mq.to_dict() for mq in locked]})


def decode_lock_batch_response(data: bytes) -> list[MessageQueue]:
    d = load_json_object(data, "lock batch response")
    with malformed("lock batch response"):
        return [MessageQueue.from_dict(m) for m in d.get("lockOKMQSet") or []]


def _encode_names(key: str, names: list[str]) -> bytes:
    """`{key: [name, ...]}`, sorted: TopicList's and GroupList's shape."""
    return fastjson.dumps({key: sorted(names)})


def _decode_names(data: bytes, key: str, what: str) -> list[str]:
    d = load_json_object(data, what)
    with malformed(what):
        return [str(name) for name in d.get(key) or []]


def encode_topic_list(topics: list[str]) -> bytes:
    return _encode_names("topicList", topics)


def decode_topic_list(data: bytes) -> list[str]:
    return _decode_names(data, "topicList", "topic list")


def encode_kv_table(table: dict[str, str]) -> bytes:
    return fastjson.dumps({"table": table})


def decode_kv_table(data: bytes) -> dict[str, str]:
    """KVTable (GET_BROKER_RUNTIME_INFO's body): strings under names."""
    d = load_json_object(data, "kv table")
    with malformed("kv table"):
        return {str(k): str(v) for k, v in (d.get("table") or {}).items()}


def encode_group_list(groups: list[str]) -> bytes:
    """QUERY_TOPIC_CONSUME_BY_WHO's body."""
    return _encode_names("groupList", groups)


def decode_group_list(data: bytes) -> list[str]:
    return _decode_names(data, "groupList", "group list")


def keyed_by_queue(table: dict[MessageQueue, Any]) -> dict[tuple[tuple[str, Any], ...], Any]:
    """A map keyed by MessageQueue in the form Java reads it: each key an object
    (`{{"brokerName":..,"queueId":..,"topic":..}:value}`), written by
    `fastjson.dumps_bare_int_keys`.  Standard JSON has no object keys, and fastjson refuses
    anything else where the field is a `Map<MessageQueue, ...>`."""
    return {fastjson.object_key(mq.to_dict()): v for mq, v in sorted(table.items())}


def encode_offset_table(table: dict[MessageQueue, int]) -> bytes:
    """ResetOffsetBody: `{"offsetTable": {MessageQueue: offset}}`, object keys."""
    return fastjson.dumps_bare_int_keys({"offsetTable": keyed_by_queue(table)})


def decode_offset_table(data: bytes) -> dict[MessageQueue, int]:
    """Reads fastjson's object-keyed map form and a list of entries."""
    raw = load_json_object(data, "offset table").get("offsetTable") or {}
    with malformed("offset table"):
        if isinstance(raw, dict):
            return {MessageQueue.from_dict(k): int(v) for k, v in raw.items()}
        return {MessageQueue.from_dict(e): int(e["offset"]) for e in raw}


# --------------------------------------------------------------------------- consume stats


@dataclass(slots=True)
class OffsetWrapper:
    """One queue of GET_CONSUME_STATS: where the queue ends, where the group is."""

    broker_offset: int
    consumer_offset: int
    # Store time of the last consumed message (0 when unknown).
    last_timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "lastTimestamp": self.last_timestamp,
        }

    @classmethod
    def from_dict(cls, d: Any) -> OffsetWrapper:
        d = json_object(d, "offset wrapper")
        return cls(
            broker_offset=int(d.get("brokerOffset", 0)),
            consumer_offset=int(d.get("consumerOffset", 0)),
            last_timestamp=int(d.get("lastTimestamp", 0) or 0),
        )


@dataclass(slots=True)
class ConsumeStats:
    """GET_CONSUME_STATS body: `offsetTable` keyed by MessageQueue objects, as Java writes
    and reads it (a list of entries, which earlier Longboat brokers wrote, is read too)."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def to_json(self) -> bytes:
        table = {mq: w.to_dict() for mq, w in self.offset_table.items()}
        return fastjson.dumps_bare_int_keys(
            {"consumeTps": self.consume_tps, "offsetTable": keyed_by_queue(table)}
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> ConsumeStats:
        d = load_json_object(data, "consume stats")
        raw = d.get("offsetTable") or {}
        with malformed("consume stats"):
            if isinstance(raw, dict):
                table = {
                    MessageQueue.from_dict(k): OffsetWrapper.from_dict(v) for k, v in raw.items()
                }
            else:
                table = {MessageQueue.from_dict(e): OffsetWrapper.from_dict(e) for e in raw}
            return cls(offset_table=table, consume_tps=float(d.get("consumeTps") or 0.0))


# --------------------------------------------------------------------------- topic stats


@dataclass(frozen=True, slots=True)
class TopicOffset:
    """One queue of GET_TOPIC_STATS_INFO: its offset range and its last message's store time."""

    min_offset: int
    max_offset: int
    last_update_timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "lastUpdateTimestamp": self.last_update_timestamp,
            "maxOffset": self.max_offset,
            "minOffset": self.min_offset,
        }

    @classmethod
    def from_dict(cls, d: Any) -> TopicOffset:
        d = json_object(d, "topic offset")
        return cls(
            min_offset=int(d.get("minOffset", 0)),
            max_offset=int(d.get("maxOffset", 0)),
            last_update_timestamp=int(d.get("lastUpdateTimestamp", 0) or 0),
        )


def encode_topic_stats(table: dict[MessageQueue, TopicOffset]) -> bytes:
    """TopicStatsTable: `{"offsetTable": {MessageQueue: TopicOffset}}`, object keys."""
    rows = {mq: t.to_dict() for mq, t in table.items()}
    return fastjson.dumps_bare_int_keys({"offsetTable": keyed_by_queue(rows)})


def decode_topic_stats(data: bytes) -> dict[MessageQueue, TopicOffset]:
    raw = load_json_object(data, "topic stats").get("offsetTable") or {}
    with malformed("topic stats"):
        return {MessageQueue.from_dict(k): TopicOffset.from_dict(v) for k, v in raw.items()}
