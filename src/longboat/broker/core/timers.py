"""Timer messages (RIP-43) and their recall handles: the rules both protocols keep.

A message naming `TIMER_DELIVER_MS` (absolute, epoch ms), `TIMER_DELAY_SEC` or
`TIMER_DELAY_MS` (relative to its arrival) — a gRPC DELAY message's `delivery_timestamp`
becomes `TIMER_DELIVER_MS` — is stored at once in `rmq_sys_wheel_timer` queue 0, as RocketMQ
does, with REAL_TOPIC / REAL_QID saying where it belongs and `TIMER_OUT_MS` (also its tags
code) the instant it is due.  That instant is the delivery time rounded UP to the grain, so
none arrives before its time and none later than RocketMQ's: RocketMQ files a message in the
slot of its time rounded down (one grain below it when it is a multiple of the grain) and
reads a slot once its grain has passed, which is the same instant (RocketMQ's own
`TIMER_OUT_MS`, and the time in its recall handle, name that slot: one grain below ours).
The grain is what RocketMQ makes of `timerPrecisionMs` (`timer_precision`): 100, 200, 500
or 1,000 ms.
A time already past is no timer: the message is stored as sent.  One farther than
`timerMaxDelaySec` is refused with RocketMQ's code and remark; with `timerWheelEnable=false`
every timer message is refused (SYSTEM_ERROR), as RocketMQ refuses it.  A message with a
delay level keeps the level and loses its timer properties (RocketMQ's HookUtils).  A batch
holding a message that would be a timer is refused (`handlers/send.py`): RocketMQ reads only
the batch's own properties and stores its messages as sent, each delivered before its time.

A send of a timer message answers with its recall handle (`protocol/recall_handle.py`).
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from longboat.broker.core.refusal import Reason, Refusal
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.protocol.recall_handle import RecallHandle
from longboat.protocol.sysflags import MessageSysFlag
from longboat.store import MessageInner

TIMER_TOPIC = "rmq_sys_wheel_timer"
TIMER_QUEUE = 0
# MessageStoreConfig.setTimerPrecisionMs: the only grains RocketMQ's wheel runs at.
_GRAINS_MS = (100, 200, 500, 1000)
TIMER_PROPS = (Prop.TIMER_DELAY_SEC, Prop.TIMER_DELAY_MS, Prop.TIMER_DELIVER_MS)


class Timers(Protocol):
    """What the adapters and the metrics use of the broker's timer service."""

    # Timer messages filed in the wheel / delivered to their topics, by real topic
    # (rocketmq_timer_enqueue_total / rocketmq_timer_dequeue_total).
    enqueued: Counter[str]
    dequeued: Counter[str]

    @property
    def pending(self) -> int:
        """Timers waiting (rocketmq_timer_dequeue_lag)."""
        ...

    def due_counts(self) -> tuple[list[int], list[int]]:
        """The pending timers' due times (ms, in no order) and, aligned, how many are due
        at each; safe to call from another thread (the metrics scrape's)."""
        ...

    def recall(self, topic: str, raw_handle: str) -> str:
        """Recall a pending timer message of `topic`; its message id (Refusal otherwise)."""
        ...


def has_timer(properties: dict[str, str]) -> bool:
    return any(name in properties for name in TIMER_PROPS)


def timer_precision(setting_ms: int) -> int:
    """The grain RocketMQ makes of a `timerPrecisionMs` setting: the largest of 100, 200, 500
    and 1,000 ms not above it (100 below that), so a setting coarser than 1 s runs at 1 s."""
    return max((grain for grain in _GRAINS_MS if grain <= setting_ms), default=_GRAINS_MS[0])


def reroute_timer(
    msg: MessageInner, now_ms: int, precision_ms: int, max_delay_sec: int, enabled: bool = True
) -> bool:
    """Rewrite a timer message in place to the timer queue, due at its time rounded up to
    the grain of the `timerPrecisionMs` setting `precision_ms`; False when it is none (or due
    already).  Refusal (MESSAGE_ILLEGAL) when its time is unreadable or too far ahead;
    Refusal (SYSTEM_ERROR, RocketMQ's remark) for any timer when timers are off."""
    props = msg.properties
    if msg.topic == TIMER_TOPIC or Prop.TIMER_OUT_MS in props or not has_timer(props):
        return False
    if props.get(Prop.DELAY, "0") not in ("", "0"):
        for name in TIMER_PROPS:
            props.pop(name, None)
        return False
    if not MessageSysFlag.is_consumable_transaction_type(msg.sys_flag):
        return False  # a prepared half: its commit is the one delivered (see transactions)
    if not enabled:
        raise Refusal(Reason.TIMERS_DISABLED, TIMERS_DISABLED_REMARK)
    max_delay_ms = max_delay_sec * 1000
    try:
        if Prop.TIMER_DELAY_SEC in props:
            deliver_ms = now_ms + int(props[Prop.TIMER_DELAY_SEC]) * 1000
        elif Prop.TIMER_DELAY_MS in props:
            deliver_ms = now_ms + int(props[Prop.TIMER_DELAY_MS])
        else:
            deliver_ms = int(props[Prop.TIMER_DELIVER_MS])
    except ValueError:
        raise Refusal(Reason.ILLEGAL_DELIVERY_TIME, illegal_timer_remark(max_delay_ms)) from None
    if deliver_ms <= now_ms:
        return False
    if deliver_ms - now_ms > max_delay_ms:
        raise Refusal(Reason.ILLEGAL_DELIVERY_TIME, illegal_timer_remark(max_delay_ms))
    grain = timer_precision(precision_ms)
    due_ms = -(-deliver_ms // grain) * grain
    props[Prop.TIMER_OUT_MS] = str(due_ms)
    props[Prop.REAL_TOPIC] = msg.topic
    props[Prop.REAL_QID] = str(msg.queue_id)
    msg.topic = TIMER_TOPIC
    msg.queue_id = TIMER_QUEUE
    msg.tags_code = due_ms
    return True


# RocketMQ's remark for WHEEL_TIMER_NOT_ENABLE, word for word (it names the setting's value).
TIMERS_DISABLED_REMARK = "accurate timer message is not enabled, timerWheelEnable is false"


def illegal_timer_remark(max_delay_ms: int) -> str:
    """RocketMQ's remark for WHEEL_TIMER_MSG_ILLEGAL, word for word."""
    return (
        "timer message illegal, the delay time should not be bigger than the max delay "
        f"{max_delay_ms}ms; or if set del msg, the delay time should be bigger than the "
        "current time"
    )


def due_ms_of(properties: dict[str, str]) -> int | None:
    """When a message of the timer queue is due; None when it does not say."""
    raw = properties.get(Prop.TIMER_OUT_MS, "")
    return int(raw) if raw.isdigit() else None


def timer_tags_code(msg: MessageExt) -> int | None:
    """The tags code of a timer-queue record (its due time), for the store's recovery; None
    for any other record.  A record of an earlier version has only TIMER_DELIVER_MS."""
    if msg.topic != TIMER_TOPIC:
        return None
    due = due_ms_of(msg.properties)
    if due is None:
        raw = msg.properties.get(Prop.TIMER_DELIVER_MS, "")
        due = int(raw) if raw.isdigit() else 0
    return due


def recall_handle_for(properties: dict[str, str], broker_name: str, message_id: str) -> str:
    """The handle a send of a timer message answers with; "" for any other message."""
    due = due_ms_of(properties)
    topic = properties.get(Prop.REAL_TOPIC, "")
    if due is None or not topic:
        return ""
    return RecallHandle(topic, broker_name, due + 1, message_id).encode()


def decode_recall_handle(raw: str) -> RecallHandle:
    """Refusal (ILLEGAL_OPERATION, RocketMQ's remark) when `raw` is not a handle."""
    try:
        return RecallHandle.decode(raw)
    except ValueError as bad:
        raise Refusal(Reason.ILLEGAL_RECALL, str(bad)) from None


def check_recall(
    handle: RecallHandle, topic: str, broker_name: str, now_ms: int, max_delay_sec: int
) -> None:
    """RocketMQ's RecallMessageProcessor checks, in its order and with its remarks."""
    if handle.topic != topic:
        raise Refusal(Reason.ILLEGAL_RECALL, "recall failed, topic not match")
    if handle.broker_name != broker_name:
        raise Refusal(Reason.ILLEGAL_RECALL, "recall failed, broker service not available")
    left = handle.timestamp_ms - now_ms
    if left <= 0 or left >= max_delay_sec * 1000:
        # Delivered already (or never a timer of ours): too late to recall.
        raise Refusal(Reason.ILLEGAL_RECALL, "recall failed, timestamp invalid")
