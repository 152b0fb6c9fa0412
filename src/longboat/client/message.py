"""What applications build and get back: `Message` to send, `SendResult` for where it went.

Received messages are `longboat.protocol.message.MessageExt`, re-exported here, so one type
serves the store, the broker and the client.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from longboat.client.errors import ClientUsageError
from longboat.client.payloads import CONTENT_TYPE, encode
from longboat.protocol.codes import ResponseCode
from longboat.protocol.delay_ladder import DEFAULT_DELAYS_MS, DEFAULT_MESSAGE_DELAY_LEVEL
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import KEY_SEPARATOR, Prop
from longboat.protocol.topic_names import LMQ_PREFIX, LMQ_SEPARATOR, is_lmq, validate_topic
from longboat.protocol.types import MessageQueue

__all__ = ["Message", "MessageExt", "MessageQueue", "SendResult", "SendStatus"]


def check_delay_level(level: int) -> int:
    """`level` when it names one of RocketMQ's 18 default delay levels (or 0); else
    ClientUsageError: a broker would silently clamp 99 to its last level (2 hours)."""
    if not 0 <= level <= len(DEFAULT_DELAYS_MS):
        raise ClientUsageError(
            f"delay_level {level} is not a delay level: 1..{len(DEFAULT_DELAYS_MS)} "
            f"({DEFAULT_MESSAGE_DELAY_LEVEL}), or 0 for none"
        )
    return level


def delay_level_for(delay: timedelta) -> int:
    """The delay level sent for `delay` to a broker without timers: the shortest default
    level at least as long (0 for none), so a message is never delivered before its delay —
    3 s waits 5 s, 45 s waits 1 m, 90 min waits 2 h.  ClientUsageError for a negative delay
    or one longer than the last level (2 hours): rounding it down would deliver early."""
    ms = delay.total_seconds() * 1000
    if ms < 0 or ms > DEFAULT_DELAYS_MS[-1]:
        raise ClientUsageError(
            f"no delay level is at least {delay}: the levels go from 1 s to 2 h "
            f"({DEFAULT_MESSAGE_DELAY_LEVEL}), the broker has no timer messages, and a "
            "message is never sent to arrive early"
        )
    if ms == 0:
        return 0
    return bisect_left(DEFAULT_DELAYS_MS, ms) + 1


def delay_property(delay: timedelta, *, timers: bool) -> tuple[str, str]:
    """The property a send of `delay` (positive) carries: to a broker with timers the exact
    `TIMER_DELAY_MS` (RocketMQ 5's timer message; whole milliseconds, rounded up), else
    `DELAY` with the level `delay_level_for` rounds up to.  The one place a duration becomes
    what travels; whether the broker has timers is `_internal/broker_timers.py`'s to say."""
    if timers:
        return Prop.TIMER_DELAY_MS, str(-(-delay // timedelta(milliseconds=1)))
    return Prop.DELAY, str(delay_level_for(delay))


def deliver_ms(at: datetime | int) -> int:
    """Epoch milliseconds of a delivery time; ClientUsageError for a naive datetime (whose
    zone the broker could not know)."""
    if isinstance(at, datetime):
        if at.tzinfo is None:
            raise ClientUsageError("deliver_at needs an aware datetime (with its tzinfo)")
        return int(at.timestamp() * 1000)
    return int(at)


def check_lmq(name: str) -> str:
    """`name` when it names a light message queue: the `%LMQ%` prefix and a legal topic name
    (so no separator nor path in it).  Else ClientUsageError: a broker skips such a name, and
    RocketMQ 5.3.3 stops dispatching the message to its LMQs at a plain one."""
    problem = validate_topic(name)
    if problem is not None or not is_lmq(name):
        raise ClientUsageError(
            f"{name!r} is no light message queue: {problem or f'it lacks the {LMQ_PREFIX} prefix'}"
        )
    return name


@dataclass(slots=True)
class Message:
    """A message to send.  `keys` are indexed by the broker for lookups by key."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: list[str] | str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    # 1..18 (1 s .. 2 h with the default levels); 0 = deliver at once.
    delay_level: int = 0
    # The user flag stored with the message (Java `Message.flag`).
    flag: int = 0
    # Instead of `delay_level`: a duration.  Sent as an exact timer to a broker with timers,
    # else rounded up to a default level (`delay_property`), so never delivered early.
    delay: timedelta | None = None
    # An exact delivery time (a timer message, RocketMQ 5's TIMER_DELIVER_MS): an aware
    # datetime or epoch milliseconds.  Needs a broker with timers (Longboat, RocketMQ 5);
    # a 4.x broker ignores it and delivers at once.
    deliver_at: datetime | int | None = None
    # Light message queues (RocketMQ's LMQ, RIP-28) the message is also readable from, each a
    # `%LMQ%` name: sent as INNER_MULTI_DISPATCH, so a broker with enableLmq and
    # enableMultiDispatch stores the message once and gives each LMQ an entry (queue 0 of the
    # `%LMQ%` topic, read with `QueueReader`).  Single sends only: no broker dispatches a batch.
    lmqs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.body, str):
            raise TypeError("Message.body must be bytes; encode text first")
        for name in self.lmqs:
            check_lmq(name)
        if self.deliver_at is not None:
            if self.delay is not None or self.delay_level:
                raise ClientUsageError("give deliver_at, delay or delay_level, not two of them")
            deliver_ms(self.deliver_at)  # a naive datetime is refused here, before any send
        if self.delay is not None:
            if self.delay_level:
                raise ClientUsageError("give delay or delay_level, not both")
            if self.delay < timedelta(0):
                raise ClientUsageError(f"a delay cannot be negative: {self.delay}")
            if not self.delay:
                self.delay = None
        elif self.delay_level:  # 0 (most messages) needs no check: a batch builds many
            check_delay_level(self.delay_level)

    @classmethod
    def of(cls, topic: str, payload: object, **fields: Any) -> Message:
        """A message whose body is `payload` encoded as JSON by its type's codec (see
        `longboat.client.payloads`), with property CONTENT_TYPE saying so; bytes are sent as
        they are, without it.  `fields` are the other fields (`tags`, `keys`, `delay`, ...).
        Raises ClientUsageError for a payload no codec can encode."""
        if isinstance(payload, bytes):
            return cls(topic, payload, **fields)
        body, content_type = encode(payload)
        msg = cls(topic, body, **fields)
        msg.properties = {**msg.properties, CONTENT_TYPE: content_type}
        return msg

    @property
    def key_list(self) -> list[str]:
        if not self.keys:
            return []
        if isinstance(self.keys, str):
            return [k for k in self.keys.split(KEY_SEPARATOR) if k]
        return [k for k in self.keys if k]

    @property
    def delayed(self) -> bool:
        """Whether the message waits before delivery (a level or a `delay`; a `deliver_at`
        is a timer of its own)."""
        return self.delay_level > 0 or self.delay is not None

    def wire_properties(self) -> dict[str, str]:
        """User properties plus TAGS / KEYS / DELAY, as the broker reads them.  A `delay`
        is not among them: its property depends on the broker (`delay_property`), which the
        producer adds to each attempt."""
        props = dict(self.properties)
        if self.tags:
            props[Prop.TAGS] = self.tags
        keys = self.key_list
        if keys:
            props[Prop.KEYS] = KEY_SEPARATOR.join(keys)
        if check_delay_level(self.delay_level) > 0:
            props[Prop.DELAY] = str(self.delay_level)
        if self.deliver_at is not None:
            props[Prop.TIMER_DELIVER_MS] = str(deliver_ms(self.deliver_at))
        if self.lmqs:
            props[Prop.INNER_MULTI_DISPATCH] = LMQ_SEPARATOR.join(self.lmqs)
        return props


class SendStatus(Enum):
    """Stored, and how durably: only SEND_OK met every durability the broker promises."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"

    @classmethod
    def from_code(cls, code: int) -> SendStatus:
        return _STATUS_BY_CODE[code]


_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(frozen=True, slots=True)
class SendResult:
    status: SendStatus
    # The producer's UNIQ_KEY (comma-joined for a batch): what consumers see as msg_id.
    msg_id: str
    # The broker's offset id (comma-joined for a batch): finds the record by address.
    offset_msg_id: str
    message_queue: MessageQueue
    # Queue offset of the (first) stored message.
    queue_offset: int
    region_id: str | None = None
    transaction_id: str | None = None
    # A timer message's handle for `Producer.recall` (RocketMQ 5.3's recallHandle).
    recall_handle: str | None = None
    # The broker's trace switch (traceOn): False asks clients to write no trace of it.
    trace_on: bool = True

    @property
    def msg_ids(self) -> list[str]:
        """Each message's id, in send order (one for a single send, one per batch element)."""
        return self.msg_id.split(",")

    @property
    def offset_msg_ids(self) -> list[str]:
        """Each stored record's offset id, in send order."""
        return self.offset_msg_id.split(",") if self.offset_msg_id else []

    @property
    def ok(self) -> bool:
        return self.status is SendStatus.SEND_OK
