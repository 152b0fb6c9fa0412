"""The retry and dead-letter decision, in one place for both paths that make it.

Two paths bring a failed message back: CONSUMER_SEND_MSG_BACK (the `retry` module: the broker
copies the message by commit-log offset) and a plain send to `%RETRY%<group>` (the `send`
module: a client whose send-back failed produces the copy itself, header j = times reconsumed,
l = its limit).  Both ask this module where the message goes:

| times reconsumed (j) vs the limit     | level asked (send-back) | destination                   |
|---------------------------------------|-------------------------|-------------------------------|
| j >= limit                            | any                     | `%DLQ%<group>` queue 0, now   |
| j <  limit                            | negative                | `%DLQ%<group>` queue 0, now   |
| j <  limit                            | 0                       | retry, level 3 + j            |
| j <  limit                            | n > 0                   | retry, level n                |

The limit is the client's when it may send one (request version >= 3.4.9), else the group's
`retryMaxTimes` (16 by default).  A dead letter loses its DELAY: unlike RocketMQ 4.x
(apache/rocketmq#2724) it does not wait out one more delay level first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from longboat.protocol.codes import VERSION_MAX_RECONSUME_HEADER
from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from longboat.store import MessageInner

if TYPE_CHECKING:
    from longboat.broker.feature_host import FeatureHost, TopicCreator
    from longboat.broker.state.subscription_groups import SubscriptionGroupTable

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


def dead_letter_queue(topics: TopicCreator, group: str, properties: dict[str, str]) -> str:
    """The group's dead-letter topic (created on first use; its queue is always 0), with
    DELAY taken out of `properties`: a dead letter is stored at once."""
    topics.ensure_dlq_topic(group)
    properties.pop(Prop.DELAY, None)
    return DLQ_GROUP_TOPIC_PREFIX + group


def route_retry_send(
    host: FeatureHost,
    msg: MessageInner,
    *,
    reconsume_times: int | None,
    max_reconsume_header: int | None,
    request_version: int,
) -> bool:
    """For a produced message (SEND_MESSAGE*): when it targets `%RETRY%<group>` and has been
    reconsumed enough, move it in place to `%DLQ%<group>` queue 0 without DELAY.  True when
    it was moved.  The send path calls this before storing."""
    if not msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return False
    group = msg.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
    limit = max_reconsume_times(
        max_reconsume_header, request_version, host.subscription_groups, group
    )
    if not plan_send_back(reconsume_times or 0, 0, limit).dead_letter:
        return False
    msg.topic = dead_letter_queue(host.topics, group, msg.properties)
    msg.queue_id = 0
    return True
