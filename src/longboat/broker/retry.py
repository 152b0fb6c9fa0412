"""Retries and dead letters: CONSUMER_SEND_MSG_BACK (36) and the send-side DLQ rule.

A consumer that failed a message sends it back by commit-log offset.  The broker stores a copy
in `%RETRY%<group>` through the delay levels (level 3 + times already reconsumed, or the level
asked for), so it comes back later on the group's retry subscription; once it has been
reconsumed `maxReconsumeTimes` times (16 by default) — or when the consumer asks with a
negative level — the copy goes to `%DLQ%<group>` instead, at once: unlike RocketMQ 4.x
(apache/rocketmq#2724) a dead letter does not wait out one more delay level first.

Properties the clients rely on: RETRY_TOPIC (the topic the application sees again, set on the
first send-back and kept after), ORIGIN_MESSAGE_ID (the first delivery's id, kept across
retries), and the record's RECONSUMETIMES field, one higher per send-back.

The send-side rule covers clients whose send-back failed and who produce the copy to
`%RETRY%<group>` themselves (header j = times reconsumed, l = their limit): `route_retry_send`
moves such a message to the DLQ once j >= the limit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.codes import VERSION_MAX_RECONSUME_HEADER
from longboat.protocol.headers import ConsumerSendMsgBackRequestHeader
from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from longboat.remoting import Connection
from longboat.store import MessageInner, PutStatus

if TYPE_CHECKING:
    from longboat.broker.feature_host import FeatureHost
    from longboat.broker.subscription_groups import SubscriptionGroupTable

# The first retry waits level 3 (10 s on the default ladder), each later one a level more.
FIRST_RETRY_LEVEL = 3


@dataclass(frozen=True, slots=True)
class SendBackPlan:
    dead_letter: bool
    delay_level: int  # 0 for a dead letter: it is stored at once


def plan_send_back(
    reconsume_times: int, requested_level: int, max_reconsume_times: int
) -> SendBackPlan:
    """Where a sent-back message goes, given how often it was reconsumed already."""
    if requested_level < 0 or reconsume_times >= max_reconsume_times:
        return SendBackPlan(dead_letter=True, delay_level=0)
    level = requested_level if requested_level > 0 else FIRST_RETRY_LEVEL + reconsume_times
    return SendBackPlan(dead_letter=False, delay_level=level)


def max_reconsume_times(
    header_value: int | None, request_version: int, groups: SubscriptionGroupTable, group: str
) -> int:
    """The client's limit when it may send one (version >= 3.4.9), else the group's setting."""
    if header_value is not None and request_version >= VERSION_MAX_RECONSUME_HEADER:
        return header_value
    return groups.get(group).retry_max_times


def route_retry_send(
    controller: FeatureHost,
    msg: MessageInner,
    *,
    reconsume_times: int | None,
    max_reconsume_header: int | None,
    request_version: int,
) -> bool:
    """For a produced message (SEND_MESSAGE*): when it targets `%RETRY%<group>` and has been
    reconsumed enough, move it in place to `%DLQ%<group>` queue 0 without DELAY (creating the
    DLQ topic).  True when it was moved.  The send path calls this before storing."""
    if not msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return False
    group = msg.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
    limit = max_reconsume_times(
        max_reconsume_header, request_version, controller.subscription_groups, group
    )
    if (reconsume_times or 0) < limit:
        return False
    controller.topics.ensure_dlq_topic(group)
    msg.topic = DLQ_GROUP_TOPIC_PREFIX + group
    msg.queue_id = 0
    msg.properties.pop(Prop.DELAY, None)
    return True


class SendBackProcessor:
    def __init__(self, controller: FeatureHost) -> None:
        self.controller = controller

    async def send_back(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader.from_ext(cmd.ext_fields)
        ctl = self.controller
        group = header.group
        settings = ctl.subscription_groups.get(group)
        if settings.retry_queue_nums <= 0:
            # RocketMQ's switch for a group that wants no retries: accepted and dropped.
            return cmd.make_response()
        original = ctl.store.read_message(header.offset)
        if original is None:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}"
            )
        limit = max_reconsume_times(
            header.maxReconsumeTimes, cmd.version, ctl.subscription_groups, group
        )
        plan = plan_send_back(original.reconsume_times, header.delayLevel, limit)

        props = dict(original.properties)
        props.setdefault(Prop.RETRY_TOPIC, original.topic)
        props.setdefault(Prop.ORIGIN_MESSAGE_ID, original.offset_msg_id)
        if plan.dead_letter:
            ctl.topics.ensure_dlq_topic(group)
            topic, queue_id = DLQ_GROUP_TOPIC_PREFIX + group, 0
            props.pop(Prop.DELAY, None)
        else:
            retry = ctl.topics.ensure_retry_topic(group, settings.retry_queue_nums)
            queues = max(1, min(settings.retry_queue_nums, retry.write_queue_nums))
            topic, queue_id = RETRY_GROUP_TOPIC_PREFIX + group, random.randrange(queues)
            props[Prop.DELAY] = str(plan.delay_level)
        copy = MessageInner.moved(
            original, topic, queue_id, props, reconsume_times=original.reconsume_times + 1
        )
        result = await ctl.put_message(copy)
        if result.status is PutStatus.PUT_OK:
            return cmd.make_response()
        # The client falls back to producing the copy itself: tell it why this failed.
        return cmd.make_response(
            ResponseCode.SYSTEM_ERROR,
            f"send back to {topic} failed: {result.status.value} {result.error or ''}".rstrip(),
        )


def install(controller: FeatureHost) -> None:
    processor = SendBackProcessor(controller)
    controller.router.register(RequestCode.CONSUMER_SEND_MSG_BACK, processor.send_back)
