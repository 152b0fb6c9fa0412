"""Topic- and group-name rules, as RocketMQ's TopicValidator and Validators.checkGroup enforce
them on send, on topic creation and on a consumer's first heartbeat.

Broker, client and store all check names, so the rule lives once, here.  The answer is the
error text (what a broker puts in its remark) rather than an exception, because every caller
turns it into something different: a response code, a PutResult, a ValueError.

The whole name must match (Java tests every character): `re.match(...$)` would also accept a
trailing newline, and a topic name becomes a directory name in the store.
"""

from __future__ import annotations

import re
from functools import lru_cache

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
_LEGAL = re.compile(r"[%|a-zA-Z0-9_-]+")


@lru_cache(maxsize=4096)
def validate_topic(name: str) -> str | None:
    """None when `name` is a legal topic, else why it is not.  (Cached: every send checks its
    topic, and a broker sees few topics.)"""
    return _validate_name("topic", name, TOPIC_MAX_LENGTH)


@lru_cache(maxsize=4096)
def validate_group(name: str) -> str | None:
    """None when `name` is a legal producer or consumer group, else why it is not."""
    return _validate_name("group", name, GROUP_MAX_LENGTH)


# A consuming group names its retry topic, %RETRY%group, which must be a legal topic.
CONSUMER_GROUP_MAX_LENGTH = TOPIC_MAX_LENGTH - len("%RETRY%")


def validate_consumer_group(name: str) -> str | None:
    """None when `name` is a legal group for a consumer, else why it is not, in words about
    the group (not about its retry topic, which the user never named)."""
    if problem := validate_group(name):
        return problem
    if len(name) > CONSUMER_GROUP_MAX_LENGTH:
        return (
            f"the group name is {len(name)} characters long; a consumer's group may have at "
            f"most {CONSUMER_GROUP_MAX_LENGTH} characters (its retry topic is named after it)"
        )
    return None


def _validate_name(kind: str, name: str, max_length: int) -> str | None:
    if not name or not name.strip():
        return f"the {kind} name is blank"
    if len(name) > max_length:
        return f"the {kind} name is {len(name)} characters long, over the limit of {max_length}"
    if _LEGAL.fullmatch(name) is None:
        return f"the {kind} name {name!r} has characters outside ^[%|a-zA-Z0-9_-]+$"
    return None


def is_system_topic(name: str) -> bool:
    """A topic the broker owns (TopicValidator.isSystemTopic: the set, or the rmq_sys_ prefix)."""
    return name in SYSTEM_TOPICS or name.startswith(SYSTEM_TOPIC_PREFIX)


# The auto-create topic.  A broker with autoCreateTopicEnable keeps it with the INHERIT
# permission; a producer sending to a topic nobody created names it as the default topic, and
# the broker creates the topic from it on that send.  Until then the producer routes by
# TBW102's route, so both sides must agree on the new topic's queue count:
# `auto_created_queue_nums` is that agreement.
AUTO_CREATE_TOPIC_KEY = "TBW102"
# Queues a producer asks for when its send auto-creates a topic (Java's defaultTopicQueueNums
# is 4): 8, as `topic create` makes and a default broker's TBW102 allows, so a topic has the
# same number of queues however it came to exist.
DEFAULT_TOPIC_QUEUE_NUMS = 8


def auto_created_queue_nums(requested: int, default_topic_write_queue_nums: int) -> int:
    """Read and write queues of a topic that a send creates from the auto-create topic: what
    the producer asked for, at most the auto-create topic's write queues, at least one
    (RocketMQ's createTopicInSendMessageMethod).  The broker creates the topic with this many;
    the producer routes by it until the topic's own route exists."""
    return max(1, min(requested, default_topic_write_queue_nums))


SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
# Transactional messages: halves wait in the first, decisions are recorded in the second,
# halves checked too often end in the third.
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
# A consumer group's own topics: its redeliveries and its dead letters.
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"

# Topics producers may not send to: the broker's own bookkeeping (TopicValidator's
# NOT_ALLOWED_SEND_TOPIC_SET).
NOT_ALLOWED_SEND_TOPICS: frozenset[str] = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
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


# RocketMQ's brokers create `<cluster>_REPLY_TOPIC` for request-reply (MixAll.REPLY_TOPIC_POSTFIX).
REPLY_TOPIC_SUFFIX = "_REPLY_TOPIC"


def topic_kind(topic: str, reserved: set[str]) -> str:
    """What a name-server topic is: `normal` (a user's), `retry` or `dlq` (a group's), or
    `system` (one the brokers keep for themselves; their cluster and broker names, passed as
    `reserved`, are registered as topics too, and so is each cluster's reply topic)."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    if is_system_topic(topic) or topic in reserved or is_reply_topic(topic, reserved):
        return "system"
    return "normal"


def is_reply_topic(topic: str, reserved: set[str]) -> bool:
    return topic.endswith(REPLY_TOPIC_SUFFIX) and topic[: -len(REPLY_TOPIC_SUFFIX)] in reserved


# Light message queues (RocketMQ's LMQ, RIP-28): a `%LMQ%` name is one queue (id 0) that a
# message reaches through its INNER_MULTI_DISPATCH property, with no topic config or route.
LMQ_PREFIX = "%LMQ%"
LMQ_QUEUE_ID = 0
LMQ_SEPARATOR = ","  # between the names of INNER_MULTI_DISPATCH


def is_lmq(topic: str) -> bool:
    return topic.startswith(LMQ_PREFIX)


def topic_allows_lmq(topic: str) -> bool:
    """Whether a message stored in `topic` goes to its LMQs (MixAll.topicAllowsLMQ): not while
    it waits for its delay or timer, nor as a group's retry copy; once in its real topic (or a
    dead-letter topic) it does, so a delayed message reaches its LMQs once, when due."""
    return not (
        topic.startswith((RETRY_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX)) or topic == SCHEDULE_TOPIC
    )


def admin_topic_refusal(topic: str) -> str | None:
    """Why an admin may not create, update or delete `topic`, None when it may: an illegal
    name, or one of the broker's own (TopicValidator.validateTopic and isSystemTopic)."""
    if problem := validate_topic(topic):
        return problem
    if is_system_topic(topic):
        return f"the topic {topic!r} is a system topic, reserved for the broker"
    return None


def send_refusal(topic: str) -> str | None:
    """Why an application may not send to `topic`, None when it may (RocketMQ's
    Validators.checkTopic and TopicValidator.isNotAllowedSendTopic, and the names only Longboat
    itself writes to: a group's retry and dead-letter topics, the trace topic).  The client's
    own sends (a consumer's retry copy, a trace record) do not pass through this check."""
    if problem := admin_topic_refusal(topic):
        return problem
    if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
        return (
            f"the topic {topic!r} is a consumer group's retry or dead-letter topic; only the "
            "broker and the group's consumers write to it"
        )
    return None


def kept_name(name: str) -> str:
    """`name` in a string of its own, for a table that keeps it for the life of the process.

    A name taken straight from a parsed document (a table's JSON, a registration body) sits in
    memory among the parse's short-lived objects, and CPython returns memory to the system
    only in whole 1 MiB arenas: 100,000 names kept from a parse pin most of its arenas, tens
    of MB that stay resident after the parse is gone.  A copy made while building the table
    lands beside the table's other objects instead.  (A concatenation always makes a new
    string; `str(name)` or `name[:]` would return `name` itself.)"""
    return name[:1] + name[1:]
