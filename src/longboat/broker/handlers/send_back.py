"""Retries and dead letters: CONSUMER_SEND_MSG_BACK (36).

A consumer that failed a message sends it back by commit-log offset.  The broker stores a copy
in `%RETRY%<group>` through the delay levels (level 3 + times already reconsumed, or the level
asked for), so it comes back later on the group's retry subscription; once it has been
reconsumed `maxReconsumeTimes` times (16 by default) — or when the consumer asks with a
negative level — the copy goes to `%DLQ%<group>` instead, at once.  The decision is
`retry_policy`'s, shared with the send path (clients that produce the copy themselves).

Properties the clients rely on: RETRY_TOPIC (the topic the application sees again, set on the
first send-back and kept after), ORIGIN_MESSAGE_ID (the first delivery's id, kept across
retries), and the record's RECONSUMETIMES field, one higher per send-back.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from longboat.broker.core.retry_policy import dead_letter_queue, max_reconsume_times, plan_send_back
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import ConsumerSendMsgBackRequestHeader
from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX, validate_group
from longboat.remoting import Connection
from longboat.store import MessageInner, PutStatus

if TYPE_CHECKING:
    from longboat.broker.feature_host import FeatureHost


class SendBackProcessor:
    def __init__(self, controller: FeatureHost) -> None:
        self.controller = controller

    async def send_back(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader.from_ext(cmd.ext_fields)
        ctl = self.controller
        group = header.group
        if problem := validate_group(group):
            return cmd.make_response(
                ResponseCode.INVALID_PARAMETER, f"{problem} (the sender's error)"
            )
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
            topic, queue_id = dead_letter_queue(ctl.topics, group, props), 0
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
