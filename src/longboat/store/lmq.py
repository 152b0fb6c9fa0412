"""Light message queues (RocketMQ's LMQ, RIP-28): one record, readable from many queues.

A message whose `INNER_MULTI_DISPATCH` property names `%LMQ%` queues (comma-separated) is
written once to the commit log and its topic's queue as any message, and also gets an entry in
queue 0 of each named LMQ, whose arrival listeners are told as for any queue (a pull held on an
LMQ wakes at dispatch).  The offset it has in each is written back into the record, as
RocketMQ does, in `INNER_MULTI_QUEUE_OFFSET` (comma-separated, in the same order), so a
reader of an LMQ knows the message's place there, and so recovery and replication rebuild the
LMQ entries from the records alone (`lmq_targets`).

LMQs have no topic config: they exist as their queue files do.  Only single messages are
dispatched, and only with `enable_multi_dispatch`; otherwise the property is an ordinary
property and costs nothing.  A batch's elements are stored with their INNER_MULTI_DISPATCH and
dispatched nowhere, as RocketMQ 5.3 does: its batch append writes no INNER_MULTI_QUEUE_OFFSET,
and its dispatcher sends to LMQs only records that carry one; it refuses no such batch.  A
name holding a path separator is skipped (RocketMQ's ConsumeQueue skips it too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from longboat.protocol.message import RecordParts
from longboat.store.arrivals import Arrivals
from longboat.store.consume_queue import ENTRY
from longboat.store.queue_table import QueueTable

INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
LMQ_PREFIX = "%LMQ%"
LMQ_QUEUE_ID = 0
SEPARATOR = ","
_PATH_SEP = "/"

_NAME_VALUE = b"\x01"
_PROPERTY_END = b"\x02"
_MARK = INNER_MULTI_DISPATCH.encode() + _NAME_VALUE
_OFFSET_KEY = INNER_MULTI_QUEUE_OFFSET.encode() + _NAME_VALUE

# Per message of a batch: the LMQs it goes to and its offset in each (None: not dispatched).
Targets = list[list[tuple[str, int]] | None]


def is_lmq(topic: str) -> bool:
    return topic.startswith(LMQ_PREFIX)


def _lmq_names(value: str) -> list[str]:
    """The queues a dispatch goes to, in the property's order: its `%LMQ%` names but those
    holding a path separator, which RocketMQ skips too (a queue's name is a directory's)."""
    return [name for name in value.split(SEPARATOR) if is_lmq(name) and _PATH_SEP not in name]


def _property(properties: bytes, mark: bytes) -> str | None:
    """One property's value from the encoded properties; None when absent."""
    at = properties.find(mark)
    if at < 0 or (at > 0 and properties[at - 1 : at] != _PROPERTY_END):
        return None
    start = at + len(mark)
    end = properties.find(_PROPERTY_END, start)
    return properties[start : end if end >= 0 else len(properties)].decode()


def plan(queues: QueueTable, messages: list[RecordParts]) -> tuple[list[RecordParts], Targets]:
    """The messages with their LMQ offsets written back, and where each goes (caller holds
    the store's lock, so the offsets are the queues' next ones)."""
    targets: Targets = []
    out: list[RecordParts] = []
    for body, properties, flag in messages:
        value = _property(properties, _MARK) if _MARK in properties else None
        names = _lmq_names(value) if value else []
        if not names:
            targets.append(None)
            out.append((body, properties, flag))
            continue
        placed = []
        for name in names:
            cq = queues.get(name, LMQ_QUEUE_ID)
            placed.append((name, cq.max_offset if cq is not None else 0))
        offsets = SEPARATOR.join(str(offset) for _, offset in placed).encode()
        if properties and not properties.endswith(_PROPERTY_END):
            properties += _PROPERTY_END
        properties += _OFFSET_KEY + offsets
        targets.append(placed)
        out.append((body, properties, flag))
    return out, targets


def write(
    queues: QueueTable, targets: Targets, offsets: list[int], sizes: list[int], codes: list[int]
) -> None:
    """The LMQ entries of records just written at `offsets` (caller holds the lock)."""
    for placed, phys, size, code in zip(targets, offsets, sizes, codes, strict=True):
        for name, queue_offset in placed or ():
            cq = queues.get_or_create(name, LMQ_QUEUE_ID)
            cq.append(queue_offset, ENTRY.pack(phys, size, code))
            queues.dirty.add(cq)


def tell_arrivals(
    arrivals: Arrivals,
    targets: Targets,
    codes: Sequence[int],
    properties_of: Callable[[int], Mapping[str, str]],
) -> None:
    """Tell the arrival listeners of each LMQ entry just written, as of any queue's: a pull
    held on an LMQ is woken by the dispatch, not by the hold service's periodic re-check."""
    for i, placed in enumerate(targets):
        for name, queue_offset in placed or ():
            arrivals.tell(name, LMQ_QUEUE_ID, queue_offset + 1, codes[i], properties_of(i))


def lmq_targets(properties: Mapping[str, str]) -> list[tuple[str, int]]:
    """Where a stored record was dispatched besides its own queue (recovery, replication)."""
    names = properties.get(INNER_MULTI_DISPATCH)
    offsets = properties.get(INNER_MULTI_QUEUE_OFFSET)
    if not names or not offsets:
        return []
    # The offsets are those of the names `plan` dispatched to, in their order.
    pairs = zip(_lmq_names(names), offsets.split(SEPARATOR), strict=False)
    return [(name, int(offset)) for name, offset in pairs if offset.isdigit()]
