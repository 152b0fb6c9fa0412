"""Topic-name rules, as RocketMQ's TopicValidator enforces them on send and on topic creation.

Broker, client and store all check names, so the rule lives once, here.  The answer is the
error text (what a broker puts in its remark) rather than an exception, because every caller
turns it into something different: a response code, a PutResult, a ValueError.
"""

from __future__ import annotations

import re

TOPIC_MAX_LENGTH = 127
_LEGAL = re.compile(r"^[%|a-zA-Z0-9_-]+$")


def validate_topic(name: str) -> str | None:
    """None when `name` is a legal topic, else why it is not."""
    if not name or not name.strip():
        return "the topic name is blank"
    if len(name) > TOPIC_MAX_LENGTH:
        return (
            f"the topic name is {len(name)} characters long, over the limit of {TOPIC_MAX_LENGTH}"
        )
    if not _LEGAL.match(name):
        return f"the topic name {name!r} has characters outside ^[%|a-zA-Z0-9_-]+$"
    return None


AUTO_CREATE_TOPIC_KEY = "TBW102"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
# A consumer group's own topics: its redeliveries and its dead letters.
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"

# Topics producers may not send to: the broker's own bookkeeping (TopicValidator's
# NOT_ALLOWED_SEND_TOPIC_SET).
NOT_ALLOWED_SEND_TOPICS: frozenset[str] = frozenset(
    {
        SCHEDULE_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)

# Topics an admin may not create or reconfigure (TopicValidator's SYSTEM_TOPIC_SET; a broker
# also reserves its cluster name and broker name).
SYSTEM_TOPICS: frozenset[str] = NOT_ALLOWED_SEND_TOPICS | {
    AUTO_CREATE_TOPIC_KEY,
    "BenchmarkTest",
    "RMQ_SYS_TRACE_TOPIC",
}
