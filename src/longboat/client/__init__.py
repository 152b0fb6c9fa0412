"""Longboat's Python client: producer, consumers and admin over the RocketMQ 4.x protocol.

An asyncio core (this package) with a blocking facade (`longboat.client.sync`) for code that
is not async.  The same client talks to Longboat brokers and to real RocketMQ 4.x brokers.
"""

from __future__ import annotations

from longboat.client.config import ClientConfig
from longboat.client.errors import (
    BrokerBusyError,
    BrokerError,
    ClientClosedError,
    ClientError,
    ClientUsageError,
    GroupOnlineError,
    MessageNotFoundError,
    MessageTooLargeError,
    NoRouteError,
    PayloadError,
    SendTimeoutError,
    TransportError,
)
from longboat.client.message import Message, MessageExt, MessageQueue, SendResult, SendStatus
from longboat.client.types import PullResult, PullStatus

__all__ = [
    "BrokerBusyError",
    "BrokerError",
    "ClientClosedError",
    "ClientConfig",
    "ClientError",
    "ClientUsageError",
    "GroupOnlineError",
    "Message",
    "MessageExt",
    "MessageNotFoundError",
    "MessageQueue",
    "MessageTooLargeError",
    "NoRouteError",
    "PayloadError",
    "PullResult",
    "PullStatus",
    "SendResult",
    "SendStatus",
    "SendTimeoutError",
    "TransportError",
]
