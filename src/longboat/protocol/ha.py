"""RocketMQ 4.x's master-slave replication stream (HAService), as bytes.

A slave connects to its master's HA port and reports, as an 8-byte big-endian long, the end of
its commit log: once on connecting (where the master starts streaming; 0 means "start at the
beginning of your last commit-log file"), after every chunk it stores, and every heartbeat
interval.  The master answers with frames of `[8-byte offset][4-byte size][size bytes of its
commit log from that offset]`, never crossing one of its commit-log files; a size of 0 is a
heartbeat.  There is no handshake, no version and no framing of the reports beyond their
length, so both sides here are plain incremental decoders.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from longboat.protocol.errors import ProtocolError

_REPORT = struct.Struct(">q")
_HEADER = struct.Struct(">qi")
REPORT_SIZE = _REPORT.size
HEADER_SIZE = _HEADER.size
# A master sends at most this much per frame (RocketMQ's haTransferBatchSize).
TRANSFER_BATCH_SIZE = 32 * 1024
# Frames larger than this are refused as garbage (a commit-log file is at most this big).
MAX_FRAME_BODY = 1 << 30


def encode_report(offset: int) -> bytes:
    """A slave's report: the end of its commit log."""
    return _REPORT.pack(offset)


def encode_frame_header(offset: int, size: int) -> bytes:
    """A master's frame header; `size` bytes of its commit log from `offset` follow."""
    return _HEADER.pack(offset, size)


class ReportDecoder:
    """The master's side: the slave's latest report out of whatever bytes arrived."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> int | None:
        """Returns the last whole report in the bytes so far (earlier ones are superseded),
        or None when no whole report has arrived since the last call."""
        self._buffer += data
        whole = len(self._buffer) - len(self._buffer) % REPORT_SIZE
        if not whole:
            return None
        (offset,) = _REPORT.unpack_from(self._buffer, whole - REPORT_SIZE)
        del self._buffer[:whole]
        if offset < 0:
            raise ProtocolError(f"a slave reported a negative commit-log offset {offset}")
        return offset


@dataclass(frozen=True, slots=True)
class Frame:
    offset: int
    data: bytes  # empty for a heartbeat


class FrameDecoder:
    """The slave's side: whole frames out of the master's stream."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        pos = 0
        buf = self._buffer
        while len(buf) - pos >= HEADER_SIZE:
            offset, size = _HEADER.unpack_from(buf, pos)
            if offset < 0 or not 0 <= size <= MAX_FRAME_BODY:
                raise ProtocolError(f"bad replication frame header: offset {offset}, size {size}")
            if len(buf) - pos - HEADER_SIZE < size:
                break
            start = pos + HEADER_SIZE
            frames.append(Frame(offset, bytes(buf[start : start + size])))
            pos = start + size
        del buf[:pos]
        return frames


# In controller mode (RocketMQ 5) the master must know which broker each stream serves, to
# keep its SyncStateSet: a slave of a Longboat master in controller mode opens its connection
# with a hello (a marker no report can be, as reports are never negative, then its broker
# id) before its first report.
_HELLO = struct.Struct(">qq")
HELLO_SIZE = _HELLO.size
_HELLO_MARK = -0x4C42_4841  # "LBHA"


def encode_hello(broker_id: int) -> bytes:
    return _HELLO.pack(_HELLO_MARK, broker_id)


def decode_hello(data: bytes) -> int:
    """The slave's broker id; raises ProtocolError when `data` is not a hello."""
    mark, broker_id = _HELLO.unpack(data)
    if mark != _HELLO_MARK:
        raise ProtocolError("the slave did not introduce itself (controller mode needs a hello)")
    return int(broker_id)
