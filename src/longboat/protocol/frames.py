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
from collections import deque

from longboat.protocol.command import RemotingCommand
from longboat.protocol.errors import FrameTooLarge, MalformedHeader, ProtocolError
from longboat.protocol.header_codec import decode_header, encode_header, request_identity

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
_PREFIX = struct.Struct(">iI")  # frame length, (serialize type << 24) | header length
_LENGTH = struct.Struct(">i")
# "HTTP" read as a frame length: an HTTP server's answer (a client pointed at a web port).
_HTTP_AS_LENGTH = _LENGTH.unpack(b"HTTP")[0]


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

    Received chunks are kept as they came, not copied into one growing buffer: a frame that
    lies in one chunk (most requests and answers) is read from it in place, and one spread
    over several (a large pull answer) has its body joined from views of them, one copy.  A
    growing buffer copied every byte once more, and large frames could cost it far more than
    the copies, depending on the read sizes and the allocator's state (`bench.protocol_codec`,
    its large-answer row with `--against`).

    Invariants: `_chunks` hold the unconsumed bytes, from `_pos` in the first; `_size` counts
    them; a frame is parsed only when all of it is present.  A caller that drains
    `next_command()` after every `feed()` never holds more than `max_frame` bytes here,
    because the length of the frame in front is checked on every feed and every call.
    """

    __slots__ = ("_chunks", "_pos", "_size", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._chunks: deque[bytes] = deque()
        self._pos = 0
        self._size = 0
        self.max_frame = max_frame

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Take received bytes (kept, not copied, when they are `bytes`); raises
        FrameTooLarge for an oversized frame at once."""
        if not data:
            return
        chunk = data if type(data) is bytes else bytes(data)
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size >= 4:
            self._check_length(_LENGTH.unpack(self._peek(4))[0])

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as commands."""
        return self._size

    def _check_length(self, length: int) -> None:
        if length < 4:
            raise ProtocolError(f"frame length {length} is below the 4-byte minimum")
        if length == _HTTP_AS_LENGTH:
            raise ProtocolError(
                "the peer answered in HTTP: this looks like a web port (a dashboard, a proxy), "
                "not a RocketMQ name server or broker"
            )
        if length > self.max_frame - 4:
            raise FrameTooLarge(
                f"frame of {length + 4} bytes exceeds the {self.max_frame}-byte limit"
            )

    def _peek(self, n: int) -> bytes:
        """The next `n` bytes (`n` <= `_size`), left in place."""
        first, pos = self._chunks[0], self._pos
        if len(first) - pos >= n:
            return first[pos : pos + n]
        out = bytearray()
        for chunk in self._chunks:
            out += chunk[pos : pos + n - len(out)]
            pos = 0
            if len(out) == n:
                break
        return bytes(out)

    def _take(self, n: int) -> list[bytes | memoryview]:
        """The next `n` bytes (`n` <= `_size`) as pieces of the chunks, consumed."""
        pieces: list[bytes | memoryview] = []
        chunks, pos = self._chunks, self._pos
        self._size -= n
        while n:
            chunk = chunks[0]
            left = len(chunk) - pos
            if left <= n:
                pieces.append(memoryview(chunk)[pos:] if pos else chunk)
                chunks.popleft()
                pos = 0
                n -= left
            else:
                pieces.append(memoryview(chunk)[pos : pos + n])
                pos += n
                n = 0
        self._pos = pos
        return pieces

    def next_command(self) -> RemotingCommand | None:
        """The next whole command, or None until more bytes arrive.

        Raises ProtocolError (the peer's fault) for a malformed frame; the stream cannot be
        resynchronised after that, so the connection should be closed.  A whole frame whose
        header cannot be read raises MalformedHeader after consuming the frame: reading on is
        safe, and its `request` (when known) can be answered.
        """
        size = self._size
        if size < 8:
            if size >= 4:
                self._check_length(_LENGTH.unpack(self._peek(4))[0])
            return None
        first, pos = self._chunks[0], self._pos
        if len(first) - pos >= 8:
            length, marker = _PREFIX.unpack_from(first, pos)
        else:
            length, marker = _PREFIX.unpack(self._peek(8))
        self._check_length(length)
        if size < 4 + length:
            return None
        hlen = marker & 0xFFFFFF
        if hlen > length - 4:
            raise ProtocolError(f"bad header length {hlen} in a frame of {length} bytes")
        serialize_type = marker >> 24
        end = pos + 4 + length
        header: bytes | memoryview
        if end <= len(first):  # the whole frame in one chunk: read in place
            bstart = pos + 8 + hlen
            header = memoryview(first)[pos + 8 : bstart]
            if end == len(first):
                self._chunks.popleft()
                self._pos = 0
            else:
                self._pos = end
            self._size = size - 4 - length
            body: bytes = first[bstart:end] if bstart < end else b""
        else:
            self._take(8)
            header = b"".join(self._take(hlen))
            body = b"".join(self._take(length - 4 - hlen))
        try:
            cmd = decode_header(serialize_type, header)
        except ProtocolError as exc:
            raise MalformedHeader(str(exc), request_identity(serialize_type, header)) from None
        cmd.body = body
        return cmd

    def commands(self) -> list[RemotingCommand]:
        """Every whole command buffered so far."""
        out = []
        while (cmd := self.next_command()) is not None:
            out.append(cmd)
        return out
