"""The push consumer: messages handed to a listener, built on long-polling pulls.

See `docs/consumer.md` for how the parts (rebalance, pull loop, process queue, consume
services, offset stores) work together.
"""

from __future__ import annotations

from longboat.client.consume.process_queue import FlowControl, ProcessQueue
from longboat.client.consume_from import ConsumeFrom
from longboat.client.consumer_settings import MessageModel, PushConsumerSettings
from longboat.client.push.consumer import PushConsumer
from longboat.client.push.listener import (
    ConcurrentContext,
    ConsumeResult,
    ListenerKindError,
    OrderlyContext,
    OrderlyResult,
)

__all__ = [
    "ConcurrentContext",
    "ConsumeFrom",
    "ConsumeResult",
    "FlowControl",
    "ListenerKindError",
    "MessageModel",
    "OrderlyContext",
    "OrderlyResult",
    "ProcessQueue",
    "PushConsumer",
    "PushConsumerSettings",
]
