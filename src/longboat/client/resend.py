"""Resend a stored message to one consumer group: the dashboard's "resend" and "resend from
the DLQ".

The copy is produced to `%RETRY%group`, which only that group reads (every member subscribes to
its group's retry topic), with RETRY_TOPIC naming the topic it was first sent to, so consumers
see it under that topic (`restore_retry_topic`).  Its reconsume count starts again at 0: a
message resent from the DLQ gets the group's full retries again.  This works without a live
member (the copy waits in the retry topic) and on any RocketMQ 4.x broker, unlike
CONSUME_MESSAGE_DIRECTLY, which hands the message to one connected client and is lost if it
fails.
"""

from __future__ import annotations

from longboat.client.message import Message, MessageExt, SendResult
from longboat.client.producer import Producer
from longboat.client.push.redelivery import PULL_ONLY_PROPS, retry_topic
from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

# Bookkeeping of earlier deliveries that must not travel with the fresh copy.
_DELIVERY_PROPS = (*PULL_ONLY_PROPS, Prop.RECONSUME_TIME, Prop.MAX_RECONSUME_TIMES)


def original_topic(msg: MessageExt) -> str:
    """The topic the message was first sent to (a retry or DLQ copy names it in RETRY_TOPIC)."""
    real = msg.properties.get(Prop.RETRY_TOPIC)
    if real and msg.topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
        return real
    return msg.topic


def resend_copy(msg: MessageExt, group: str) -> Message:
    props = {k: v for k, v in msg.properties.items() if k not in _DELIVERY_PROPS}
    props[Prop.RETRY_TOPIC] = original_topic(msg)
    props.setdefault(Prop.ORIGIN_MESSAGE_ID, msg.msg_id)
    props[Prop.RECONSUME_TIME] = "0"
    return Message(topic=retry_topic(group), body=msg.body, properties=props, flag=msg.flag)


async def resend_to_group(producer: Producer, msg: MessageExt, group: str) -> SendResult:
    """Deliver `msg` once more to `group` (and to no other group)."""
    return await producer.send_own(resend_copy(msg, group))
