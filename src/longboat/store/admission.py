"""Checking messages before anything is written, and computing what the append needs.

Everything a message can be refused for is decided here, outside the append lock, so a
refused message leaves no trace on disk and the lock covers only offset assignment and the
copy.  The per-message work done here (property string, tag hash) is also the work the
dispatcher needs, so it is done once.  Key hashes are not: only the index needs them, and it
reads them from the stored property bytes when it is written (`store.index.keys`).
"""

from __future__ import annotations

from dataclasses import dataclass

from longboat.protocol.message import MAX_PROPERTIES_BYTES, RecordParts, RecordSender
from longboat.protocol.properties import (
    PROPERTY_SEPARATOR,
    Prop,
    properties_to_string,
    property_marker,
    raw_property,
    raw_property_each,
)
from longboat.protocol.tags import tags_code
from longboat.protocol.topic_names import validate_topic
from longboat.store.message_inner import EncodedBatch, MessageInner
from longboat.store.results import PutResult, PutStatus

_TAGS_CACHE_LIMIT = 4096
_TRANSACTION_MASK = 0xC
# Plain messages and committed halves of transactions go into consume queues.
_CONSUMABLE = (0x0, 0x8)
_TAGS_MARKER = property_marker(Prop.TAGS)
_SEPARATOR = PROPERTY_SEPARATOR.encode()


@dataclass(slots=True)
class Admitted:
    """A batch that passed every check, with its encoded parts."""

    topic: str
    topic_bytes: bytes
    queue_id: int
    # Per message, body, properties (encoded) and flag, as `encode_record_batch` takes them.
    messages: list[RecordParts]
    # What the records say of their sender: one for the whole batch, or one per message.
    senders: RecordSender | list[RecordSender]
    # Per message, whether it gets a queue entry (not the prepared or rolled-back half of a
    # transaction); None when every message does, the common case.
    consumable: list[bool] | None
    tags_codes: list[int]


class Admission:
    def __init__(self, max_message_size: int) -> None:
        self.max_message_size = max_message_size
        self._tags_codes: dict[str, int] = {}
        self._raw_tags_codes: dict[bytes | None, int] = {}  # None: no tag

    def tags_code(self, tags: str | None) -> int:
        """The tag hash, from a small cache: a store sees few distinct tags."""
        if not tags:
            return 0
        code = self._tags_codes.get(tags)
        if code is None:
            if len(self._tags_codes) >= _TAGS_CACHE_LIMIT:
                self._tags_codes.clear()
            code = self._tags_codes[tags] = tags_code(tags)
        return code

    def _raw_tags_codes_of(self, props: list[bytes], joined: bytes) -> list[int]:
        """Each message's tag hash read from its encoded properties (`joined`: them joined by
        the property separator): the whole batch at once when it can be (no message has a tag,
        or each has one), else message by message."""
        if _TAGS_MARKER not in joined:
            return [0] * len(props)
        each = raw_property_each(props, joined, _TAGS_MARKER)
        values = each if each is not None else [raw_property(p, _TAGS_MARKER) for p in props]
        codes = list(map(self._raw_tags_codes.get, values))
        if None in codes:  # a tag not seen lately
            codes = [self._raw_tags_code(tags) if code is None else code
                     for tags, code in zip(values, codes, strict=True)]  # fmt: skip
        return codes  # type: ignore[return-value]  # no None left

    def _raw_tags_code(self, tags: bytes | None) -> int:
        raw_codes = self._raw_tags_codes
        if len(raw_codes) >= _TAGS_CACHE_LIMIT:
            raw_codes.clear()
        code = raw_codes[tags] = tags_code(tags.decode()) if tags is not None else 0
        return code

    def admit(self, msgs: list[MessageInner]) -> Admitted | PutResult:
        """The batch's encoded parts, or the PutResult refusing it (nothing written)."""
        if not msgs:
            return _illegal("an empty batch")
        first = msgs[0]
        topic, queue_id = first.topic, first.queue_id
        refused = _bad_target(topic, queue_id)
        if refused is not None:
            return refused
        limit = self.max_message_size
        parts: list[RecordParts] = []
        senders: list[RecordSender] = []
        plain_flags: list[bool] = []
        codes: list[int] = []
        tag_cache = self._tags_codes
        for m in msgs:
            if (
                m.topic != topic
                or m.queue_id != queue_id
                or len(m.body) > limit
                or len(m.born_host) not in (4, 16)
            ):
                return _refuse_one(m, topic, queue_id, limit)
            sys_flag = m.sys_flag
            plain_flags.append(sys_flag & _TRANSACTION_MASK in _CONSUMABLE)
            props = m.properties
            encoded = properties_to_string(props).encode() if props else b""
            if len(encoded) > MAX_PROPERTIES_BYTES:
                return PutResult(
                    PutStatus.PROPERTIES_SIZE_EXCEEDED,
                    error=f"properties of {len(encoded)} bytes exceed {MAX_PROPERTIES_BYTES}",
                )
            parts.append((m.body, encoded, m.flag))
            senders.append(
                (sys_flag, m.born_timestamp, m.born_host, m.born_port, m.reconsume_times,
                 m.prepared_transaction_offset)
            )  # fmt: skip
            if m.tags_code is not None or not props:
                codes.append(m.tags_code or 0)
            else:
                tags = props.get(Prop.TAGS)
                code = tag_cache.get(tags) if tags else 0
                codes.append(self.tags_code(tags) if code is None else code)
        consumable = None if all(plain_flags) else plain_flags
        return Admitted(topic, topic.encode(), queue_id, parts, senders, consumable, codes)

    def admit_encoded(self, batch: EncodedBatch) -> Admitted | PutResult:
        """`admit` for a batch that keeps its property bytes: the tag is read from the
        bytes (`raw_property`), nothing is parsed into a dict or re-encoded."""
        topic, queue_id, msgs = batch.topic, batch.queue_id, batch.messages
        if not msgs:
            return _illegal("an empty batch")
        refused = _bad_target(topic, queue_id)
        if refused is not None:
            return refused
        sys_flag, born_host = batch.sys_flag, batch.born_host
        if len(born_host) not in (4, 16):
            return _illegal(f"born host of {len(born_host)} bytes is not IPv4 or IPv6")
        limit = self.max_message_size
        props = [m[1] for m in msgs]
        joined = _SEPARATOR.join(props)
        # The checks over the whole batch at C speed; a refusal names the first message at
        # fault, found message by message.
        if (
            max(map(len, [m[0] for m in msgs])) > limit
            or max(map(len, props)) > MAX_PROPERTIES_BYTES
            or not (joined.isascii() or all(map(_is_utf8, props)))
        ):
            return _first_refusal(msgs, limit)
        codes = self._raw_tags_codes_of(props, joined)
        consumable = None if sys_flag & _TRANSACTION_MASK in _CONSUMABLE else [False] * len(msgs)
        sender = (sys_flag, batch.born_timestamp, born_host, batch.born_port, 0, 0)
        return Admitted(topic, topic.encode(), queue_id, msgs, sender, consumable, codes)


def _first_refusal(msgs: list[RecordParts], limit: int) -> PutResult:
    """Why `admit_encoded` refuses a batch that failed its batch-wide checks: the first
    message's fault, in the order the checks name them."""
    for body, props, _flag in msgs:
        if len(body) > limit:
            return _illegal(f"message body of {len(body)} bytes exceeds maxMessageSize {limit}")
        if len(props) > MAX_PROPERTIES_BYTES:
            return PutResult(
                PutStatus.PROPERTIES_SIZE_EXCEEDED,
                error=f"properties of {len(props)} bytes exceed {MAX_PROPERTIES_BYTES}",
            )
        if not props.isascii() and not _is_utf8(props):
            return _illegal("message properties are not UTF-8")
    raise AssertionError("a batch refused with no message at fault")


def _bad_target(topic: str, queue_id: int) -> PutResult | None:
    problem = validate_topic(topic) if isinstance(topic, str) else "the topic is not a string"
    if problem is not None:
        return _illegal(problem)
    if not isinstance(queue_id, int) or queue_id < 0:
        return _illegal(f"queue id {queue_id!r} is not a non-negative integer")
    return None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _refuse_one(m: MessageInner, topic: str, queue_id: int, limit: int) -> PutResult:
    if m.topic != topic or m.queue_id != queue_id:
        return _illegal(
            f"a batch goes to one queue: it has messages for {topic}/{queue_id} and for "
            f"{m.topic}/{m.queue_id}"
        )
    if len(m.body) > limit:
        return _illegal(f"message body of {len(m.body)} bytes exceeds maxMessageSize {limit}")
    return _illegal(f"born host of {len(m.born_host)} bytes is not IPv4 or IPv6")


def _illegal(why: str) -> PutResult:
    return PutResult(PutStatus.MESSAGE_ILLEGAL, error=why)
