"""Transport errors: the one seam where socket and timeout failures become Longboat errors."""

from __future__ import annotations


class RemotingError(Exception):
    """A request could not be carried out over the network."""

    retriable = True


class ConnectError(RemotingError):
    """The peer could not be reached."""


class RequestTimeout(RemotingError):
    """No response arrived within the request's timeout."""


class ConnectionClosed(RemotingError):
    """The connection closed before the response arrived."""
