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
