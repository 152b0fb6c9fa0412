"""Giving a failed message back to the broker, so it is delivered again later (or dead-lettered).

The first choice is CONSUMER_SEND_MSG_BACK to the broker the message was pulled from (it finds
the message by commit-log offset, copies it to `%RETRY%group` with the next delay level, or to
`%DLQ%group` once the reconsume count reaches the maximum).  When that broker cannot be
reached, the consumer produces the copy to `%RETRY%group` itself, with the properties the broker
would have set, so the retry survives a broker outage as RocketMQ's Java client does.  Only when
both fail does the caller fall back to retrying locally (`redeliver` returns False).

A failure with a reason (a body that did not decode, say) is always produced that way: the
broker's copy is of the stored message and could not carry the reason, which the copy holds in
property FAILURE_REASON for whoever reads the retry or dead-letter queue.  The broker still
decides retry or DLQ, on the reconsume count the copy carries.
"""

from __future__ import annotations

import logging

from longboat.client._internal.instance import ClientInstance
from longboat.client.errors import ClientError
from longboat.client.message import Message
from longboat.client.producer import Producer
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, Prop
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

# Java's first retry delay level for a message consumed `n` times is 3 + n (10 s, 30 s, ...).
FIRST_RETRY_DELAY_LEVEL = 3
DEAD_LETTER = -1
# Properties of the pulled copy that must not travel with a re-produced one.
# Why the message failed, on its retry and dead-letter copies (when the consumer knew).
FAILURE_REASON = "FAILURE_REASON"
# A property value must hold neither separator of the property string; a reason is a line.
MAX_REASON_LENGTH = 1000
PULL_ONLY_PROPS = (Prop.MIN_OFFSET, Prop.MAX_OFFSET, Prop.DELAY, Prop.REAL_TOPIC, Prop.REAL_QID)


def retry_topic(group: str) -> str:
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}"


def restore_retry_topic(msg: MessageExt, group: str) -> None:
    """Show a message pulled from `%RETRY%group` under the topic it was first sent to."""
    real = msg.properties.get(Prop.RETRY_TOPIC)
    if real and msg.topic == retry_topic(group):
        msg.topic = real


class Redelivery:
    def __init__(
        self, instance: ClientInstance, group: str, producer: Producer, *, timeout: float = 3.0
    ) -> None:
        self.instance = instance
        self.group = group
        self.producer = producer
        self.timeout = timeout

    async def redeliver(
        self,
        mq: MessageQueue,
        msg: MessageExt,
        delay_level: int,
        max_reconsume_times: int,
        *,
        reason: str | None = None,
    ) -> bool:
        """Have `msg` (pulled from `mq`) delivered again later; `delay_level` -1 sends it to
        the dead-letter queue; `reason` travels with the copy.  False when neither the broker
        nor a produce took it."""
        if reason is not None:
            return await self._produce_copy(msg, delay_level, max_reconsume_times, reason)
        try:
            addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
            await self.instance.api.send_back(
                addr,
                msg,
                self.group,
                delay_level=delay_level,
                max_reconsume_times=max_reconsume_times,
                timeout=self.timeout,
                broker_name=mq.broker_name,
            )
            return True
        except ClientError as exc:
            log.warning("send-back of %s to %s failed, producing a retry copy: %s", msg, mq, exc)
        return await self._produce_copy(msg, delay_level, max_reconsume_times)

    async def _produce_copy(
        self,
        msg: MessageExt,
        delay_level: int,
        max_reconsume_times: int,
        reason: str | None = None,
    ) -> bool:
        try:
            await self.producer.send_own(
                self._retry_copy(msg, delay_level, max_reconsume_times, reason),
                timeout=self.timeout,
            )
            return True
        except ClientError as exc:
            log.warning("producing a retry copy of %s failed: %s", msg.msg_id, exc)
            return False

    def _retry_copy(
        self, msg: MessageExt, delay_level: int, max_reconsume_times: int, reason: str | None
    ) -> Message:
        props = dict(msg.properties)
        for name in PULL_ONLY_PROPS:
            props.pop(name, None)
        if reason is not None:
            props[FAILURE_REASON] = _one_line(reason)
        props.setdefault(Prop.RETRY_TOPIC, msg.topic)
        props.setdefault(Prop.ORIGIN_MESSAGE_ID, msg.msg_id)
        props[Prop.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
        if delay_level == DEAD_LETTER:
            # The broker dead-letters a retry-topic send whose count reached the maximum.
            props[Prop.RECONSUME_TIME] = str(max_reconsume_times)
            delay = 0
        else:
            props[Prop.RECONSUME_TIME] = str(msg.reconsume_times + 1)
            delay = delay_level or FIRST_RETRY_DELAY_LEVEL + msg.reconsume_times
        return Message(
            topic=retry_topic(self.group),
            body=msg.body,
            properties=props,
            delay_level=delay,
            flag=msg.flag,
        )


def _one_line(reason: str) -> str:
    """`reason` as a property value: one line, no property separators, bounded."""
    text = " ".join(
        reason.replace(PROPERTY_SEPARATOR, " ").replace(NAME_VALUE_SEPARATOR, " ").split()
    )
    return text[:MAX_REASON_LENGTH]
