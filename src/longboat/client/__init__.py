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
    MessageTooLargeError,
    NoRouteError,
    SendTimeoutError,
    TransportError,
)
from longboat.client.message import Message, MessageExt, MessageQueue, SendResult, SendStatus

__all__ = [
    "BrokerBusyError",
    "BrokerError",
    "ClientClosedError",
    "ClientConfig",
    "ClientError",
    "ClientUsageError",
    "Message",
    "MessageExt",
    "MessageQueue",
    "MessageTooLargeError",
    "NoRouteError",
    "SendResult",
    "SendStatus",
    "SendTimeoutError",
    "TransportError",
]
