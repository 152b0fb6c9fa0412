"""A transactional send becomes a half message (RocketMQ's parseHalfMessageInner): pure
re-addressing used by the send path; `transactions` decides what becomes of it."""

from __future__ import annotations

from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import TRANS_HALF_TOPIC
from longboat.store import MessageInner

TYPE_MASK = 0xC  # the transaction-type bits of a sys flag


def is_half(props: dict[str, str]) -> bool:
    """The send carries RocketMQ's transaction-prepared property."""
    return props.get(Prop.TRAN_MSG, "").lower() == "true"


def half_message(msg: MessageInner) -> MessageInner:
    """Re-address a transactional send to the half topic's queue 0: the real topic and queue
    go into REAL_TOPIC / REAL_QID, the transaction type is cleared so the half is dispatched
    to its (internal) consume queue."""
    msg.properties[Prop.REAL_TOPIC] = msg.topic
    msg.properties[Prop.REAL_QID] = str(msg.queue_id)
    msg.sys_flag &= ~TYPE_MASK
    msg.topic = TRANS_HALF_TOPIC
    msg.queue_id = 0
    return msg
