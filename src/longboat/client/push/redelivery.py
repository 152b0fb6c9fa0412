"""Giving a failed message back to the broker, so it is delivered again later (or dead-lettered).

The first choice is CONSUMER_SEND_MSG_BACK to the broker the message was pulled from (it finds
the message by commit-log offset, copies it to `%RETRY%group` with the next delay level, or to
`%DLQ%group` once the reconsume count reaches the maximum).  When that broker cannot be
reached, the consumer produces the copy to `%RETRY%group` itself, with the properties the broker
would have set, so the retry survives a broker outage as RocketMQ's Java client does.  Only when
both fail does the caller fall back to retrying locally (`redeliver` returns False).
"""

from __future__ import annotations

import logging

from longboat.client._internal.instance import ClientInstance
from longboat.client.errors import ClientError
from longboat.client.message import Message
from longboat.client.producer import Producer
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

# Java's first retry delay level for a message consumed `n` times is 3 + n (10 s, 30 s, ...).
FIRST_RETRY_DELAY_LEVEL = 3
DEAD_LETTER = -1
# Properties of the pulled copy that must not travel with a re-produced one.
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
        self, mq: MessageQueue, msg: MessageExt, delay_level: int, max_reconsume_times: int
    ) -> bool:
        """Have `msg` (pulled from `mq`) delivered again later; `delay_level` -1 sends it to
        the dead-letter queue.  False when neither the broker nor a produce took it."""
        try:
            addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
            await self.instance.api.send_back(
                addr,
                msg,
                self.group,
                delay_level=delay_level,
                max_reconsume_times=max_reconsume_times,
                timeout=self.timeout,
            )
            return True
        except ClientError as exc:
            log.warning("send-back of %s to %s failed, producing a retry copy: %s", msg, mq, exc)
        try:
            await self.producer.send(
                self._retry_copy(msg, delay_level, max_reconsume_times), timeout=self.timeout
            )
            return True
        except ClientError as exc:
            log.warning("producing a retry copy of %s failed: %s", msg.msg_id, exc)
            return False

    def _retry_copy(self, msg: MessageExt, delay_level: int, max_reconsume_times: int) -> Message:
        props = dict(msg.properties)
        for name in PULL_ONLY_PROPS:
            props.pop(name, None)
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
