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
record in a topic that holds messages on their way (a delay level's, a timer's, a group's
retry topic: `topic_allows_lmq`) is dispatched nowhere either: the message reaches its LMQs
once, when it is stored in its real topic, as in RocketMQ.

The offsets are written one per name of INNER_MULTI_DISPATCH, at its position, as RocketMQ
writes them (its Java client finds an LMQ's offset by the position of the LMQ's name); a name
that gets no entry has an empty one.  Those are names without the `%LMQ%` prefix, which
Longboat skips, and names holding a path separator, which RocketMQ's ConsumeQueue skips too (a
queue's name is a directory's).  RocketMQ 5.3.3 writes no entry for any LMQ of a message that
names a plain queue last (its offsets then split into fewer parts than the names), and its
dispatch thread fails on one named first (it parses the empty offset as a number); Longboat
serves the LMQs named and ignores the rest (docs/compatibility.md, scenario `lmq`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from longboat.protocol.message import RecordParts
from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import LMQ_QUEUE_ID, LMQ_SEPARATOR, is_lmq, topic_allows_lmq
from longboat.store.arrivals import Arrivals
from longboat.store.consume_queue import ENTRY
from longboat.store.queue_table import QueueTable

INNER_MULTI_DISPATCH = Prop.INNER_MULTI_DISPATCH
INNER_MULTI_QUEUE_OFFSET = Prop.INNER_MULTI_QUEUE_OFFSET
SEPARATOR = LMQ_SEPARATOR
_PATH_SEP = "/"

_NAME_VALUE = b"\x01"
_PROPERTY_END = b"\x02"
_MARK = INNER_MULTI_DISPATCH.encode() + _NAME_VALUE
_OFFSET_KEY = INNER_MULTI_QUEUE_OFFSET.encode() + _NAME_VALUE

# Per message of a batch: the LMQs it goes to and its offset in each (None: not dispatched).
Targets = list[list[tuple[str, int]] | None]


def _dispatched(name: str) -> bool:
    """Whether a name of INNER_MULTI_DISPATCH gets an entry: an LMQ's name without a path
    separator, which RocketMQ skips too (a queue's name is a directory's)."""
    return is_lmq(name) and _PATH_SEP not in name


def _property(properties: bytes, mark: bytes) -> str | None:
    """One property's value from the encoded properties; None when absent."""
    at = properties.find(mark)
    if at < 0 or (at > 0 and properties[at - 1 : at] != _PROPERTY_END):
        return None
    start = at + len(mark)
    end = properties.find(_PROPERTY_END, start)
    return properties[start : end if end >= 0 else len(properties)].decode()


def _names(value: str) -> list[str]:
    """The names of an INNER_MULTI_DISPATCH value, split as Java splits (trailing empty
    names dropped), so the offsets written back line up with RocketMQ's."""
    names = value.split(SEPARATOR)
    while names and not names[-1]:
        names.pop()
    return names


def _without(properties: bytes, mark: bytes) -> bytes:
    """The encoded properties without the pair `mark` starts (the whole bytes if absent)."""
    at = properties.find(mark)
    if at < 0 or (at > 0 and properties[at - 1 : at] != _PROPERTY_END):
        return properties
    end = properties.find(_PROPERTY_END, at)
    return properties[:at] + (properties[end + 1 :] if end >= 0 else b"")


def plan(queues: QueueTable, messages: list[RecordParts]) -> tuple[list[RecordParts], Targets]:
    """The messages with their LMQ offsets written back (replacing any they carried, as a
    dead letter of a dispatched message does), and where each goes (caller holds the store's
    lock, so the offsets are the queues' next ones; a name listed twice is one entry)."""
    targets: Targets = []
    out: list[RecordParts] = []
    for body, properties, flag in messages:
        value = _property(properties, _MARK) if _MARK in properties else None
        names = _names(value) if value else []
        placed: dict[str, int] = {}
        for name in names:
            if _dispatched(name) and name not in placed:
                cq = queues.get(name, LMQ_QUEUE_ID)
                placed[name] = cq.max_offset if cq is not None else 0
        if not placed:
            targets.append(None)
            out.append((body, properties, flag))
            continue
        offsets = SEPARATOR.join(str(placed[n]) if n in placed else "" for n in names).encode()
        properties = _without(properties, _OFFSET_KEY)
        if properties and not properties.endswith(_PROPERTY_END):
            properties += _PROPERTY_END
        properties += _OFFSET_KEY + offsets
        targets.append(list(placed.items()))
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


def lmq_targets(topic: str, properties: Mapping[str, str]) -> list[tuple[str, int]]:
    """Where a stored record of `topic` was dispatched besides its own queue (recovery,
    replication): each name `plan` gave an entry, with the offset at its position."""
    names = properties.get(INNER_MULTI_DISPATCH)
    offsets = properties.get(INNER_MULTI_QUEUE_OFFSET)
    if not names or not offsets or not topic_allows_lmq(topic):
        return []
    pairs = zip(_names(names), offsets.split(SEPARATOR), strict=False)
    found = {name: int(o) for name, o in pairs if _dispatched(name) and o.isdigit()}
    return list(found.items())
