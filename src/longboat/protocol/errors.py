"""Errors raised by the sans-IO protocol layer.

`ProtocolError` means the peer sent bytes that are not a valid remoting frame or message:
the remote's fault.  The decoder never raises anything else on bad input, so a server can
catch exactly this, log the peer, close that one connection and keep serving others (or, for
a `MalformedHeader` that names its request, answer it and read on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from longboat.protocol.command import RemotingCommand


class ProtocolError(Exception):
    """The bytes received do not follow the remoting protocol."""


class FrameTooLarge(ProtocolError):
    """A frame announced a length over the configured maximum; nothing was buffered."""


class MalformedHeader(ProtocolError):
    """A whole frame arrived but its header cannot be read.  The frame was consumed, so the
    stream is still in step; `request` is a bare command with the code, opaque, flag and
    serialization the header did state (None when even those are unreadable), so a server can
    answer the sender with an error code instead of dropping the connection."""

    def __init__(self, problem: str, request: RemotingCommand | None) -> None:
        super().__init__(problem)
        self.request = request


class HeaderFieldError(ProtocolError):
    """A required ext field is missing or cannot be parsed (Java: 'the custom field is null')."""

    def __init__(self, field: str, problem: str = "is missing") -> None:
        super().__init__(f"the custom field <{field}> {problem}")
        self.field = field
