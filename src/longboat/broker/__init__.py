"""The broker: serves the remoting protocol over the store — send, pull with long polling,
consumers, offsets, retry/delay/DLQ, locks, lookups — and registers with the name servers."""

from __future__ import annotations

from longboat.broker.config import BrokerConfig, ConfigError
from longboat.broker.controller import BrokerController

__all__ = ["BrokerConfig", "BrokerController", "ConfigError"]
