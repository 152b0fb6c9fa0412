"""Choosing the queue a message goes to.

Round robin spreads load and, on a retry, steps off the broker that just failed (Java's
`selectOneMessageQueue(lastBrokerName)`).  A selector function pins messages of one sharding
key to one queue, which is what ordered messages need; `select_by_hash` is RocketMQ's
`SelectMessageQueueByHash`, with Java's `String.hashCode` so a Python and a Java producer put
the same key in the same queue.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any

from longboat.client.message import Message
from longboat.protocol.tags import java_string_hash
from longboat.protocol.types import MessageQueue

# (queues of the topic, the message, the caller's argument) -> the queue to use.
QueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]


def sharding_hash(key: Any) -> int:
    """Java's `hashCode` of a String or Integer key; other types hash by their `str`."""
    if isinstance(key, int) and not isinstance(key, bool):
        return ((key + 2**31) % 2**32) - 2**31
    return java_string_hash(key if isinstance(key, str) else str(key))


def select_by_hash(queues: Sequence[MessageQueue], msg: Message, key: Any) -> MessageQueue:
    return queues[abs(sharding_hash(key)) % len(queues)]


class RoundRobin:
    """Per-producer rotating index; starts at a random queue so producers do not march together."""

    def __init__(self) -> None:
        self._counter = itertools.count(random.randrange(1 << 16))

    def select(
        self, queues: Sequence[MessageQueue], avoid_broker: str | None = None
    ) -> MessageQueue:
        start = next(self._counter)
        if avoid_broker is not None:
            for i in range(len(queues)):
                mq = queues[(start + i) % len(queues)]
                if mq.broker_name != avoid_broker:
                    return mq
        return queues[start % len(queues)]
