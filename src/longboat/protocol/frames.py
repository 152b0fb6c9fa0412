"""Remoting frames: an incremental decoder and an encoder.

Frame layout (big-endian): total length (4, not counting itself) | serialize type (1) |
header length (3) | header | body.  The decoder is fed arbitrary chunks and yields whole
commands; a partial frame waits for more bytes.  A frame announcing more than `max_frame`
bytes is refused as soon as its 4-byte length is seen, before anything is buffered for it,
so a hostile peer cannot make us allocate.
"""

from __future__ import annotations

import struct

from longboat.protocol.command import RemotingCommand
from longboat.protocol.errors import FrameTooLarge, ProtocolError
from longboat.protocol.header_codec import decode_header, encode_header

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
_PREFIX = struct.Struct(">iI")


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

    Invariant: `_buf[_pos:]` holds the unconsumed bytes; a frame is parsed only when all of
    it is present.  Consumed bytes are dropped lazily to keep feeding O(n).
    """

    __slots__ = ("_buf", "_pos", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._pos = 0
        self.max_frame = max_frame

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._pos and self._pos >= len(self._buf) // 2:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data
        # Refuse an oversized frame as soon as its length is known.
        if len(self._buf) - self._pos >= 4:
            (length,) = struct.unpack_from(">i", self._buf, self._pos)
            self._check_length(length)

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def _check_length(self, length: int) -> None:
        if length < 4:
            raise ProtocolError(f"frame length {length} is below the 4-byte minimum")
        if length > self.max_frame:
            raise FrameTooLarge(f"frame of {length} bytes exceeds the {self.max_frame}-byte limit")

    def next_command(self) -> RemotingCommand | None:
        """The next whole command, or None until more bytes arrive."""
        buf = self._buf
        pos = self._pos
        if len(buf) - pos < 4:
            return None
        length, marker = _PREFIX.unpack_from(buf, pos) if len(buf) - pos >= 8 else (None, 0)
        if length is None:
            (length,) = struct.unpack_from(">i", buf, pos)
            self._check_length(length)
            return None
        self._check_length(length)
        end = pos + 4 + length
        if len(buf) < end:
            return None
        serialize_type = marker >> 24
        hlen = marker & 0xFFFFFF
        if hlen > length - 4:
            raise ProtocolError(f"bad header length {hlen} in a frame of {length} bytes")
        view = memoryview(buf)
        try:
            hstart = pos + 8
            cmd = decode_header(serialize_type, view[hstart : hstart + hlen])
            cmd.body = bytes(view[hstart + hlen : end])
        finally:
            view.release()
        self._pos = end
        return cmd

    def commands(self) -> list[RemotingCommand]:
        """Every whole command buffered so far."""
        out = []
        while (cmd := self.next_command()) is not None:
            out.append(cmd)
        return out
