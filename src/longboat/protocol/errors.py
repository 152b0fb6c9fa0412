"""Errors raised by the sans-IO protocol layer.

`ProtocolError` means the peer sent bytes that are not a valid remoting frame or message:
the remote's fault.  The decoder never raises anything else on bad input, so a server can
catch exactly this, log the peer, close that one connection and keep serving others.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """The bytes received do not follow the remoting protocol."""


class FrameTooLarge(ProtocolError):
    """A frame announced a length over the configured maximum; nothing was buffered."""


class HeaderFieldError(ProtocolError):
    """A required ext field is missing or cannot be parsed (Java: 'the custom field is null')."""

    def __init__(self, field: str, problem: str = "is missing") -> None:
        super().__init__(f"the custom field <{field}> {problem}")
        self.field = field
