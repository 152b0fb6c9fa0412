"""Where a consumer starts in a queue: the group's committed offset, else `consume_from`.

RocketMQ 4.x brokers answer "offset 0" for a group that never committed on a queue whose
first message is still in memory (RocketMQ #334), so a new group told to start at the last
offset replays history.  We ask with `setZeroIfNotFound=false`, which Longboat and RocketMQ 5
brokers honour by answering "not found".  A 4.x broker ignores it (Apache RocketMQ 4.9.7 does,
tests/java/test_longboat_client_on_rocketmq.py shows it), so a 0 is checked: when the broker's
consume stats for the group (GET_CONSUME_STATS without a topic: every topic the group holds an
offset on) do not list the topic, the group never committed there and the 0 means "not found".
Then the rule below applies as documented:

* LAST_OFFSET: the queue's max offset (only messages stored from now on), except retry
  queues, which start at 0 (their messages are this group's own failures);
* FIRST_OFFSET: the queue's min offset (the oldest message still kept);
* TIMESTAMP: the first message stored at or after the timestamp (retry queues: max offset).
"""

from __future__ import annotations

from enum import Enum

from longboat.client._internal.api import ClientAPI
from longboat.client.errors import ClientError, ClientUsageError
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX
from longboat.protocol.types import MessageQueue


class ConsumeFrom(Enum):
    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


async def initial_offset(
    api: ClientAPI,
    addr: str,
    group: str,
    mq: MessageQueue,
    consume_from: ConsumeFrom,
    timestamp_ms: int | None = None,
) -> int:
    """The offset to start pulling `mq` from for `group` (broker at `addr`)."""
    stored = await committed_offset(api, addr, group, mq)
    if stored is not None:
        return stored
    return await offset_for(api, addr, mq, consume_from, timestamp_ms)


async def committed_offset(api: ClientAPI, addr: str, group: str, mq: MessageQueue) -> int | None:
    """The group's committed offset on `mq`, None when it never committed there (a 4.x
    broker's 0 for "not found" told apart from a committed 0, see the module docstring)."""
    stored = await api.query_consumer_offset(addr, group, mq, set_zero_if_not_found=False)
    if stored != 0 or mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return stored
    try:
        stats = await api.get_consume_stats(addr, group)
    except ClientError:  # a broker without consume stats: take its word
        return stored
    return stored if any(q.topic == mq.topic for q in stats.offset_table) else None


async def offset_for(
    api: ClientAPI,
    addr: str,
    mq: MessageQueue,
    consume_from: ConsumeFrom,
    timestamp_ms: int | None = None,
) -> int:
    """The offset `consume_from` designates in `mq`, ignoring any committed offset."""
    is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    if consume_from is ConsumeFrom.FIRST_OFFSET:
        return await api.get_min_offset(addr, mq)
    if consume_from is ConsumeFrom.TIMESTAMP and not is_retry:
        if timestamp_ms is None:
            raise ClientUsageError("ConsumeFrom.TIMESTAMP needs a timestamp")
        return await api.search_offset(addr, mq, timestamp_ms)
    if consume_from is ConsumeFrom.LAST_OFFSET and is_retry:
        return 0
    return await api.get_max_offset(addr, mq)
