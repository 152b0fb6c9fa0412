"""The name server: brokers register their topics here; clients ask it where topics live."""

from __future__ import annotations

from longboat.namesrv.routes import RouteTable
from longboat.namesrv.server import DEFAULT_PORT, NameServer

__all__ = ["DEFAULT_PORT", "NameServer", "RouteTable"]
