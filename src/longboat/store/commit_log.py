"""The commit log: every message of every topic, appended once, addressed by byte offset.

Records are `longboat.protocol.message` records, byte for byte what a pull carries.  A record
never straddles two segments: when the next record (or batch) does not fit with room to spare
for an 8-byte end-of-segment marker (total size + BLANK_MAGIC, RocketMQ's layout), the marker
is written and the record goes to the start of the next segment.

Invariants (writer holds the store lock for every mutation):
  * min_offset <= flushed_offset <= write_offset;
  * every byte in [min_offset, write_offset) belongs to a whole valid record or to an
    end-of-segment marker's span; everything past write_offset is zero;
  * records' PHYSICALOFFSET field equals their offset, so a scan can tell a stale record that
    happens to sit at the right place from the record that belongs there.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import (
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    MessageExt,
    body_crc,
    decode_record,
)
from longboat.store.prefault import Prefaulter, mapping_address
from longboat.store.segments import MappedSegment, SegmentChain

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_SIZE_MAGIC = struct.Struct(">ii")
# Room always left at a segment's end for the end-of-segment marker.
END_MARKER_SIZE = _SIZE_MAGIC.size
# How far ahead of the writer pages are populated, at most, when they are (ASYNC_FLUSH).  The
# distance grows with what has been written since (up to this), so a busy log runs into
# populated pages while an idle broker does not hold megabytes of zeroed pages for nothing.
PREFAULT_AHEAD = 8 * 1024 * 1024


class CommitLog:
    def __init__(self, directory: Path, segment_size: int) -> None:
        if segment_size < 4096:
            raise ValueError(f"commit-log segments must be at least 4096 bytes, not {segment_size}")
        self.chain = SegmentChain(directory, segment_size, preallocate=True)
        self.segment_size = segment_size
        self.write_offset = 0
        self.flushed_offset = 0
        self._flush_lock = threading.Lock()
        self._prefaulter: Prefaulter | None = None
        self._prefaulted = 0  # pages before this offset were populated (or asked for)
        self._prefault_from = 0  # the write offset when populating ahead was turned on

    @property
    def min_offset(self) -> int:
        return self.chain.min_offset

    @property
    def max_record_size(self) -> int:
        """The largest record (or batch) one segment can take."""
        return self.segment_size - END_MARKER_SIZE

    def load(self) -> int | None:
        """Map the segment files; returns the offset where a short file lost data, if any."""
        short_at = self.chain.load()
        self.write_offset = self.flushed_offset = self.chain.min_offset
        return short_at

    # ------------------------------------------------------------------ appending

    def reserve(self, size: int) -> int:
        """Where a record (or batch) of `size` bytes goes: the write offset, or the start of the
        next segment after closing this one with an end marker."""
        offset = self.write_offset
        used = offset % self.segment_size
        if used and used + size + END_MARKER_SIZE > self.segment_size:
            seg = self.chain.segment_for_write(offset)
            remaining = self.segment_size - used
            # The next file first: when it cannot be allocated (ENOSPC) this one stays open,
            # with no end marker, and the log is as it was.
            self.chain.segment_for_write(offset + remaining)
            seg.write(offset, _SIZE_MAGIC.pack(remaining, BLANK_MAGIC))
            offset += remaining
            self.write_offset = offset
        return offset

    def allocates(self, size: int) -> bool:
        """Whether appending `size` bytes makes the log allocate a segment file."""
        offset = self.write_offset
        used = offset % self.segment_size
        if used and used + size + END_MARKER_SIZE > self.segment_size:
            return True
        return self.chain.find(offset) is None

    def write(self, offset: int, data: bytes) -> None:
        """Copy `data` in at `offset` (from `reserve`) and move the write offset past it."""
        seg = self.chain.segment_for_write(offset)
        seg.write(offset, data)
        self.write_offset = end = offset + len(data)
        if self._prefaulter is not None:
            ahead = min(PREFAULT_AHEAD, end - self._prefault_from)
            if end + ahead // 2 > self._prefaulted:
                self._prefault(seg, end, ahead)

    def prefault_ahead(self) -> None:
        """From now on keep the pages ahead of the writer populated (see `prefault`)."""
        if self._prefaulter is None:
            self._prefaulter = Prefaulter()
            self._prefault_from = self.write_offset

    def _prefault(self, seg: MappedSegment, end: int, ahead: int) -> None:
        assert self._prefaulter is not None
        start = max(self._prefaulted, end)
        stop = min(seg.end, end + ahead)
        if stop > start and self._prefaulter.working:
            self._prefaulter.request(mapping_address(seg.mm) + start - seg.start, stop - start)
        self._prefaulted = stop

    def flush(self) -> int:
        """Make everything written so far durable; returns the offset now covered."""
        with self._flush_lock:
            target = self.write_offset
            if target > self.flushed_offset:
                self.chain.sync(self.flushed_offset, target)
                self.flushed_offset = target
            return target

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, size: int) -> bytes | None:
        """`size` bytes at `offset`, within one segment and below the log's end; None when
        out of bounds or no longer mapped."""
        return self.reader()(offset, size)

    def reader(self) -> Callable[[int, int], bytes | None]:
        """`read` for many records in a row, as a pull reads them: the segment is looked up
        once while the records stay in it, and the log's bounds are taken once (records
        appended meanwhile are read by the next pull).  A range may hold several records
        back to back; none crosses a segment's end, where the end marker sits."""
        chain = self.chain
        low, high = chain.min_offset, self.write_offset
        read_segment: Callable[[int, int], bytes] | None = None
        start = stop = 0

        def read(offset: int, size: int) -> bytes | None:
            nonlocal read_segment, start, stop
            if offset < low or offset + size > high:
                return None
            if read_segment is None or not start <= offset < stop:
                segment = chain.find(offset)
                if segment is None:
                    return None
                start, stop, read_segment = segment.start, segment.end, segment.read
            if offset + size > stop:  # not records: every segment ends with its marker
                return None
            try:
                return read_segment(offset, size)
            except ValueError:  # closed under us by retention
                return None

        return read

    def read_record(self, offset: int) -> bytes | None:
        """The whole record at `offset`, or None when nothing valid starts there."""
        if offset < self.chain.min_offset or offset >= self.write_offset:
            return None
        seg = self.chain.find(offset)
        if seg is None:
            return None
        rel = offset - seg.start
        try:
            size, magic = _SIZE_MAGIC.unpack_from(seg.mm, rel)
            if (magic != MAGIC_V1 and magic != MAGIC_V2) or size <= 0 or rel + size > seg.capacity:
                return None
            return seg.mm[rel : rel + size]
        except (ValueError, struct.error):  # segment deleted under us
            return None

    def decode_at(self, offset: int) -> MessageExt | None:
        record = self.read_record(offset)
        if record is None:
            return None
        try:
            return decode_record(record)
        except ProtocolError:
            return None

    def first_store_timestamp(self, seg: MappedSegment) -> int | None:
        msg = self.decode_at(seg.start)
        return msg.store_timestamp if msg is not None else None

    # ------------------------------------------------------------------ recovery

    def starts_record(self, offset: int) -> bool:
        """Whether a scan may begin at `offset`: a segment start, the zero end of the data, or
        a record whose own offset field says it sits there (a checkpoint that points anywhere
        else is damaged, and scanning from it would cut good records as garbage)."""
        seg = self.chain.find(offset)
        if seg is None or offset == seg.start:
            return True
        size, magic = _SIZE_MAGIC.unpack_from(seg.mm, offset - seg.start)
        if size == 0 or magic == BLANK_MAGIC:
            return size == 0 or size == seg.end - offset
        try:
            return decode_record(seg.mm, offset - seg.start).commit_log_offset == offset
        except ProtocolError:
            return False

    def scan(self, start: int, limit: int | None = None) -> LogScan:
        """Verified records from `start`; with `limit`, only those wholly below it (a
        replica's log may end inside a record whose rest has not arrived yet)."""
        return LogScan(self, start, limit)

    def write_replicated(self, offset: int, data: bytes) -> None:
        """Copy a master's commit-log bytes in at `offset`, the end of this log (or, for an
        empty log, any segment boundary: a new replica starts at the master's last segment).
        The bytes may end inside a record; the caller dispatches only whole ones."""
        if offset != self.write_offset and not (
            self.chain.last is None and offset % self.segment_size == 0
        ):
            raise ValueError(
                f"replicated bytes at {offset}, but this log ends at {self.write_offset}"
            )
        while data:
            seg = self.chain.segment_for_write(offset)
            part = data[: seg.end - offset]
            seg.write(offset, part)
            offset += len(part)
            data = data[len(part) :]
        self.write_offset = offset

    def segment_data(self, offset: int, max_bytes: int) -> bytes | None:
        """Up to `max_bytes` of the log from `offset`, never past the end of the data nor of
        its segment (what a master streams to a replica); None below the log's start."""
        seg = self.chain.find(offset)
        if seg is None or offset >= self.write_offset:
            return None
        end = min(self.write_offset, seg.end, offset + max_bytes)
        try:
            return seg.read(offset, end - offset)
        except ValueError:  # deleted under us by retention
            return None

    def set_end(self, offset: int, problem: str | None) -> None:
        """End the log at `offset` after a scan: zero what follows (stale bytes past the end
        must never be read as records by a later scan) and, when a bad record was refused,
        say what was cut."""
        if problem is not None:
            last = self.chain.last
            later = sum(1 for s in self.chain.segments if s.start > offset)
            log.warning(
                "commit log: cut at offset %d (%s); discarded the rest of its segment and %d "
                "later segment file(s), %d bytes of file space",
                offset,
                problem,
                later,
                (last.end - offset) if last is not None and last.end > offset else 0,
            )
        self.chain.truncate(offset)
        self.write_offset = max(offset, self.chain.min_offset)
        self.flushed_offset = min(self.flushed_offset, self.write_offset)

    def cut(self, offset: int, reason: str) -> None:
        """End the open log at `offset` (see `set_end`), with no flush running meanwhile."""
        with self._flush_lock:
            self.set_end(offset, reason)

    def close(self) -> None:
        if self._prefaulter is not None:
            self._prefaulter.close()
            self._prefaulter = None
        self.chain.close()


# How far past the end of the data a scan looks for stray bytes.  A hole in the log (a page
# lost or zeroed while later ones survived) followed by data is cut either way; looking
# further would only make the log line about it more certain, at a cost on every open.
_HOLE_PROBE = 1024 * 1024


def _data_after_end(chain: SegmentChain, seg: MappedSegment, offset: int) -> str | None:
    """Why the zeros at `offset` are a hole rather than the end, or None if they are the end."""
    rel = offset - seg.start
    probe = seg.mm[rel : rel + _HOLE_PROBE]
    stray = len(probe) - len(probe.lstrip(b"\0"))
    if stray < len(probe):
        return f"zeros at {offset} followed by data at {offset + stray}"
    later = chain.find(seg.end)
    if later is not None and _SIZE.unpack_from(later.mm, 0)[0] != 0:
        return f"zeros at {offset} followed by data in the segment at {later.start}"
    return None


class LogScan:
    """Walks records from `start`, checking each (magic, size, CRC, decodable, offset field);
    stops at the end of the data or at the first bad record.  After iterating, `end` is the
    offset just past the last good record and `problem` says why a bad one was refused (None
    when the data simply ended)."""

    def __init__(self, log_: CommitLog, start: int, limit: int | None = None) -> None:
        self._log = log_
        self.end = start
        self.limit = limit
        self.problem: str | None = None

    def __iter__(self) -> Iterator[MessageExt]:
        chain = self._log.chain
        offset = self.end
        limit = self.limit
        while (seg := chain.find(offset)) is not None and (limit is None or offset < limit):
            with memoryview(seg.mm) as view:
                yield from self._scan_segment(chain, seg, view, offset)
            if self.problem is not None or self.end < seg.end:
                return
            offset = seg.end

    def _scan_segment(
        self, chain: SegmentChain, seg: MappedSegment, view: memoryview, offset: int
    ) -> Iterator[MessageExt]:
        """Records of one segment from `offset`; leaves `end` at seg.end only when the
        segment was closed by an end marker."""
        capacity = seg.capacity
        base = seg.start
        head = _SIZE_MAGIC.unpack_from
        limit = self.limit
        while True:
            if limit is not None and offset + END_MARKER_SIZE > limit:
                return
            rel = offset - base
            size, magic = head(view, rel)
            if size == 0:
                self.problem = _data_after_end(chain, seg, offset)
                return
            if magic == BLANK_MAGIC:
                if size != capacity - rel:
                    self.problem = f"end-of-segment marker at {offset} has size {size}"
                    return
                self.end = seg.end
                return
            if size < 0 or rel + size + END_MARKER_SIZE > capacity:
                self.problem = f"record at {offset} claims size {size}"
                return
            if limit is not None and offset + size > limit:
                return  # its rest has not arrived
            try:
                msg = decode_record(view, rel)
            except ProtocolError as exc:
                self.problem = f"the record does not decode: {exc} (segment-relative)"
                return
            if body_crc(msg.body) != msg.body_crc:
                self.problem = f"body CRC mismatch in the record at {offset}"
                return
            if msg.commit_log_offset != offset:
                self.problem = f"the record at {offset} says it belongs at {msg.commit_log_offset}"
                return
            offset += size
            self.end = offset
            yield msg
