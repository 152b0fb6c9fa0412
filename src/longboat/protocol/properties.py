"""Message property strings: `name \\x01 value \\x02 name \\x01 value ...`.

Java 4.9 writes no trailing separator; ali-ons and 3.x Java write one after every pair.
The reader accepts both and, like Java, skips segments without a name or value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from itertools import repeat

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"


class Prop:
    """The well-known property names (MessageConst)."""

    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT = "WAIT"
    DELAY = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QID = "REAL_QID"
    TRAN_MSG = "TRAN_MSG"
    PGROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    BUYER_ID = "BUYER_ID"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG = "TRANSFER_FLAG"
    CORRECTION_FLAG = "CORRECTION_FLAG"
    MQ2_FLAG = "MQ2_FLAG"
    RECONSUME_TIME = "RECONSUME_TIME"
    MSG_REGION = "MSG_REGION"
    TRACE_ON = "TRACE_ON"
    UNIQ_KEY = "UNIQ_KEY"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    POP_CK = "POP_CK"  # a popped message's checkpoint (pop_headers.ExtraInfo)
    CONSUME_START_TIME = "CONSUME_START_TIME"
    TRAN_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    INSTANCE_ID = "INSTANCE_ID"
    CORRELATION_ID = "CORRELATION_ID"
    REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    TTL = "TTL"
    ARRIVE_TIME = "ARRIVE_TIME"
    PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    CLUSTER = "CLUSTER"
    MSG_TYPE = "MSG_TYPE"
    SHARDING_KEY = "__SHARDINGKEY"
    # Timer messages (RIP-43): an absolute delivery time, or one relative to the send.
    TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
    TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
    TIMER_DELAY_MS = "TIMER_DELAY_MS"
    # The broker's: the delivery time a timer message was scheduled for, and when the timer
    # entered and left the broker's wheel (on the delivered message, as RocketMQ 5 sets them).
    TIMER_OUT_MS = "TIMER_OUT_MS"
    TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
    TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
    START_DELIVER_TIME = "__STARTDELIVERTIME"
    # RocketMQ 5's trace context (W3C traceparent), the v2 system property trace_context.
    TRACE_CONTEXT = "TRACE_CONTEXT"
    # Light message queues (RIP-28): the `%LMQ%` queues a message also goes to (comma-
    # separated, the application's), and its offset in each (the broker's).
    INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"


KEY_SEPARATOR = " "

# Names an application may not set as its own properties (MessageConst.STRING_HASH_SET): the
# client, the broker or the store sets them, and a user's value would replace theirs (a
# UNIQ_KEY of the user's would replace the message id).
RESERVED_PROPERTIES: frozenset[str] = frozenset(
    {
        Prop.TRACE_ON, Prop.MSG_REGION, Prop.KEYS, Prop.TAGS, Prop.WAIT, Prop.DELAY,
        Prop.RETRY_TOPIC, Prop.REAL_TOPIC, Prop.REAL_QID, Prop.TRAN_MSG, Prop.PGROUP,
        Prop.MIN_OFFSET, Prop.MAX_OFFSET, Prop.BUYER_ID, Prop.ORIGIN_MESSAGE_ID,
        Prop.TRANSFER_FLAG, Prop.CORRECTION_FLAG, Prop.MQ2_FLAG, Prop.RECONSUME_TIME,
        Prop.UNIQ_KEY, Prop.MAX_RECONSUME_TIMES, Prop.CONSUME_START_TIME, "POP_CK",
        "POP_CK_OFFSET", "1ST_POP_TIME", Prop.TRAN_PREPARED_QUEUE_OFFSET, "DUP_INFO",
        "EXTEND_UNIQ_INFO", Prop.INSTANCE_ID, Prop.CORRELATION_ID, Prop.REPLY_TO_CLIENT,
        Prop.TTL, Prop.ARRIVE_TIME, Prop.PUSH_REPLY_TIME, Prop.CLUSTER, Prop.MSG_TYPE,
        Prop.INNER_MULTI_QUEUE_OFFSET, "TIMER_DELAY_MS", "TIMER_DELAY_SEC", Prop.TIMER_DELIVER_MS,
        Prop.TIMER_ENQUEUE_MS, Prop.TIMER_DEQUEUE_MS, "TIMER_ROLL_TIMES", "TIMER_OUT_MS",
        "TIMER_DEL_UNIQKEY", "TIMER_DELAY_LEVEL", "__BORNHOST", "BORN_TIMESTAMP",
        "DLQ_ORIGIN_TOPIC", "DLQ_ORIGIN_MESSAGE_ID", "CRC32",
    }
)  # fmt: skip


def property_refusal(props: Mapping[str, str]) -> str | None:
    """Why an application may not send these properties, None when it may: a reserved name,
    or a name or value holding a separator (it would split into other properties on the
    way)."""
    for name, value in props.items():
        if name in RESERVED_PROPERTIES:
            return f"the property name {name!r} is used by the system; choose another"
        if holds_separator(name) or holds_separator(value):
            return (
                f"the property {name!r} holds a separator character (\\x01 or \\x02) in its "
                "name or value"
            )
    return None


def holds_separator(text: str) -> bool:
    """Whether `text` would split a property string: it holds \\x01 or \\x02."""
    return NAME_VALUE_SEPARATOR in text or PROPERTY_SEPARATOR in text


def properties_to_string(props: dict[str, str]) -> str:
    if not props:
        return ""
    return PROPERTY_SEPARATOR.join(
        [f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in props.items() if k and v is not None]
    )


def properties_text_problem(text: str) -> str | None:
    """Why a received property string is malformed, None when it is not: every segment
    (but an empty one, from a trailing separator) is one name, one NAME_VALUE_SEPARATOR and
    one value.  A separator inside a name or value breaks that shape, and the reader would
    store other properties than the sender meant."""
    for segment in text.split(PROPERTY_SEPARATOR):
        if segment and segment.count(NAME_VALUE_SEPARATOR) != 1:
            return (
                f"the property segment {segment!r} is not one name and one value: a name or "
                "value holds a separator character (\\x01 or \\x02)"
            )
    return None


def string_to_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    if not text:
        return props
    for segment in text.split(PROPERTY_SEPARATOR):
        name, _, value = segment.partition(NAME_VALUE_SEPARATOR)
        if value and name:  # a value implies the separator was there
            props[name] = value
    return props


def with_appended(props: bytes, appended: bytes) -> bytes:
    """Encoded properties with `appended` (encoded) added at the end, as RocketMQ's broker
    writes its own after a message's: a separator between them when needed.  A name in both
    is stored twice and read as the appended one, since readers keep the last occurrence."""
    if not props:
        return appended
    return props + appended if props[-1] == 2 else props + b"\x02" + appended


def raw_property(raw: bytes, marker: bytes) -> bytes | None:
    """The value of a property read straight from an encoded property string, or None;
    `marker` is the name and its separator (`property_marker`).

    Hot paths (a batch's tag and keys) read one or two names from each message's properties;
    scanning the bytes costs a fraction of parsing them into a dict.  Same answer as
    `string_to_properties`: the last non-empty occurrence wins, and a name only counts at the
    start of a segment (so "XTAGS" or a value holding "TAGS\x01" is not TAGS).
    """
    pos = raw.rfind(marker)
    while pos >= 0:
        if pos == 0 or raw[pos - 1] == 2:
            start = pos + len(marker)
            stop = raw.find(b"\x02", start)
            value = raw[start:stop] if stop >= 0 else raw[start:]
            if value:
                return value
        pos = raw.rfind(marker, 0, pos)
    return None


class RawProperties(Mapping[str, str]):
    """An encoded property string as a read-only mapping, parsed on first use: the store tells
    arrival listeners every append's properties, and they rarely look (a held pull with an
    SQL92 filter does)."""

    __slots__ = ("_parsed", "_raw")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._parsed: dict[str, str] | None = None

    def _properties(self) -> dict[str, str]:
        if self._parsed is None:
            self._parsed = string_to_properties(self._raw.decode(errors="replace"))
        return self._parsed

    def __getitem__(self, name: str) -> str:
        return self._properties()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._properties())

    def __len__(self) -> int:
        return len(self._properties())


def property_marker(name: str) -> bytes:
    """What `raw_property` looks for: the encoded name and its separator."""
    return f"{name}{NAME_VALUE_SEPARATOR}".encode()


_SEPARATOR_BYTE = PROPERTY_SEPARATOR.encode()


def raw_property_each(props: Sequence[bytes], joined: bytes, marker: bytes) -> list[bytes] | None:
    """`raw_property(p, marker)` for every `p` of a batch, read with a few C-speed calls (counts
    and one regex scan of `joined`, the properties joined by PROPERTY_SEPARATOR) instead of a
    call per message; None unless every message holds the name exactly once, at the start of
    a segment and with a value, the case a producer's batch nearly always is (the caller then
    reads message by message).  A lone message is read with `raw_property` itself: one search
    costs less than the counts (None when it holds no value)."""
    k = len(props)
    if k == 1:
        value = raw_property(props[0], marker)
        return None if value is None else [value]
    if list(map(bytes.count, props, repeat(marker))).count(1) != k:
        return None
    # The scan reads only occurrences after a separator, and `joined` gets one in front of
    # its first message: with one occurrence per message, k values means all k start a
    # segment, without counting those separately.
    values: list[bytes] = _value_pattern(marker).findall(_SEPARATOR_BYTE + joined)
    return None if len(values) != k or b"" in values else values


@cache
def _value_pattern(marker: bytes) -> re.Pattern[bytes]:
    """The value after each segment-start `marker` (a separator, then the name)."""
    separator = re.escape(_SEPARATOR_BYTE)
    return re.compile(separator + re.escape(marker) + b"([^" + separator + b"]*)")
