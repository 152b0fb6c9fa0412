"""The source's offset: `{"topic": {"brokerName:queueId": next_offset}}`.

Spark checkpoints the dict as `json.dumps` writes it and decides "new data or not" by comparing
those strings, so every dict this module hands out has its keys in sorted order at both levels
and plain `int` values: the same positions always give the same string.  The value is the
*next* offset to read (exclusive end of what a batch covered), as Kafka's source does.

In a user-given JSON offset, -2 means "earliest" and -1 "latest" for that queue (Kafka's
convention); they are resolved against the broker before a batch is planned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from longboat.protocol.types import MessageQueue

Offsets = dict[str, dict[str, int]]
EARLIEST = -2
LATEST = -1


def queue_key(mq: MessageQueue) -> str:
    return f"{mq.broker_name}:{mq.queue_id}"


def queue_of(topic: str, key: str) -> MessageQueue:
    """The queue a `brokerName:queueId` key names (broker names may contain ':')."""
    broker, sep, qid = key.rpartition(":")
    if not sep or not broker or not qid.isdigit():
        raise ValueError(f"queue key {key!r} is not 'brokerName:queueId'")
    return MessageQueue(topic, broker, int(qid))


def to_offsets(positions: Mapping[MessageQueue, int]) -> Offsets:
    """Positions per queue as the sorted nested dict Spark checkpoints."""
    nested: dict[str, dict[str, int]] = {}
    for mq, offset in positions.items():
        nested.setdefault(mq.topic, {})[queue_key(mq)] = int(offset)
    return {t: dict(sorted(nested[t].items(), key=_key_order)) for t in sorted(nested)}


def _key_order(item: tuple[str, int]) -> tuple[str, int]:
    broker, _, qid = item[0].rpartition(":")
    return broker, int(qid)


def from_offsets(offsets: Mapping[str, Mapping[str, Any]]) -> dict[MessageQueue, int]:
    """The checkpointed dict back as positions per queue (ints, whatever JSON made of them)."""
    return {
        queue_of(topic, key): int(value)
        for topic, queues in offsets.items()
        for key, value in queues.items()
    }


def parse_offsets(text: str) -> Offsets:
    """A user's JSON offsets, checked; raises ValueError saying what is wrong."""
    data = json.loads(text)
    if not isinstance(data, dict) or not data:
        raise ValueError("expected a non-empty JSON object of topics")
    positions: dict[MessageQueue, int] = {}
    for topic, queues in data.items():
        if not isinstance(queues, dict):
            raise ValueError(f"topic {topic!r} must map to an object of queues")
        for key, value in queues.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < EARLIEST:
                raise ValueError(f"offset of {topic} {key} must be an integer >= -2")
            positions[queue_of(topic, key)] = value
    return to_offsets(positions)
