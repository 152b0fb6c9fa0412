"""Remoting frames: an incremental decoder and an encoder.

Frame layout (big-endian): total length (4, not counting itself) | serialize type (1) |
header length (3) | header | body.  The decoder is fed arbitrary chunks and yields whole
commands; a partial frame waits for more bytes.  A frame whose total size (its 4-byte length
prefix included, as Netty's LengthFieldBasedFrameDecoder counts it on the Java side) exceeds
`max_frame` is refused as soon as its length is seen, before anything is buffered for it, so a
hostile peer cannot make us allocate.
"""

from __future__ import annotations

import struct

from longboat.protocol.command import RemotingCommand
from longboat.protocol.errors import FrameTooLarge, MalformedHeader, ProtocolError
from longboat.protocol.header_codec import decode_header, encode_header, request_identity

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
_PREFIX = struct.Struct(">iI")  # frame length, (serialize type << 24) | header length
_LENGTH = struct.Struct(">i")


def encode_parts(cmd: RemotingCommand) -> tuple[bytes, bytes]:
    """The frame as (prefix + header, body), so large bodies are written without a copy."""
    header = encode_header(cmd)
    hlen = len(header)
    if hlen > 0xFFFFFF:
        raise ValueError("header longer than 16 MiB")
    prefix = _PREFIX.pack(4 + hlen + len(cmd.body), (int(cmd.serialize_type) << 24) | hlen)
    return prefix + header, cmd.body


def encode_frame(cmd: RemotingCommand) -> bytes:
    head, body = encode_parts(cmd)
    return head + body if body else head


class FrameDecoder:
    """Feed bytes, take whole commands.

    Invariants: `_buf[_pos:]` holds the unconsumed bytes; a frame is parsed only when all of
    it is present; consumed bytes are dropped lazily to keep feeding O(n).  A caller that
    drains `next_command()` after every `feed()` never holds more than `max_frame` bytes
    here, because the length of the frame at `_pos` is checked on every feed and every call.
    """

    __slots__ = ("_buf", "_pos", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._pos = 0
        self.max_frame = max_frame

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes; raises FrameTooLarge for an oversized frame at once."""
        if self._pos and self._pos >= len(self._buf) // 2:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data
        if len(self._buf) - self._pos >= 4:
            self._check_length(_LENGTH.unpack_from(self._buf, self._pos)[0])

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as commands."""
        return len(self._buf) - self._pos

    def _check_length(self, length: int) -> None:
        if length < 4:
            raise ProtocolError(f"frame length {length} is below the 4-byte minimum")
        if length > self.max_frame - 4:
            raise FrameTooLarge(
                f"frame of {length + 4} bytes exceeds the {self.max_frame}-byte limit"
            )

    def next_command(self) -> RemotingCommand | None:
        """The next whole command, or None until more bytes arrive.

        Raises ProtocolError (the peer's fault) for a malformed frame; the stream cannot be
        resynchronised after that, so the connection should be closed.  A whole frame whose
        header cannot be read raises MalformedHeader after consuming the frame: reading on is
        safe, and its `request` (when known) can be answered.
        """
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if avail < 8:
            if avail >= 4:
                self._check_length(_LENGTH.unpack_from(buf, pos)[0])
            return None
        length, marker = _PREFIX.unpack_from(buf, pos)
        self._check_length(length)
        if avail < 4 + length:
            return None
        hlen = marker & 0xFFFFFF
        if hlen > length - 4:
            raise ProtocolError(f"bad header length {hlen} in a frame of {length} bytes")
        hstart = pos + 8
        bstart = hstart + hlen
        end = pos + 4 + length
        serialize_type = marker >> 24
        problem: str | None = None
        # Views are released before anything is raised: a traceback keeping one alive would
        # pin the buffer (bytearray cannot grow while exported).
        with memoryview(buf) as view, view[hstart:bstart] as header:
            try:
                cmd = decode_header(serialize_type, header)
            except ProtocolError as exc:
                problem, request = str(exc), request_identity(serialize_type, header)
            else:
                cmd.body = bytes(view[bstart:end]) if bstart < end else b""
        self._pos = end
        if problem is not None:
            raise MalformedHeader(problem, request)
        return cmd

    def commands(self) -> list[RemotingCommand]:
        """Every whole command buffered so far."""
        out = []
        while (cmd := self.next_command()) is not None:
            out.append(cmd)
        return out
