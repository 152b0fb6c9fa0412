"""asyncio transport for the remoting protocol, shared by the broker, name server and client.

This is the one I/O seam: sockets, timeouts and connection loss become `RemotingError`s here.
"""

from __future__ import annotations

from longboat.remoting.client import RemotingClient, split_addr
from longboat.remoting.connection import Connection, RequestHandler
from longboat.remoting.errors import ConnectError, ConnectionClosed, RemotingError, RequestTimeout
from longboat.remoting.router import Handler, HandlerResult, Middleware, Router
from longboat.remoting.server import ConnectionLimits, RemotingServer

__all__ = [
    "ConnectError",
    "Connection",
    "ConnectionClosed",
    "ConnectionLimits",
    "Handler",
    "HandlerResult",
    "Middleware",
    "RemotingClient",
    "RemotingError",
    "RemotingServer",
    "RequestHandler",
    "RequestTimeout",
    "Router",
    "split_addr",
]
