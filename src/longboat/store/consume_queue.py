"""A consume queue: per (topic, queue id), one 20-byte entry per message, indexed by queue offset.

    COMMIT-LOG OFFSET 8 | SIZE 4 | TAGS CODE 8      (RocketMQ's layout, big-endian)

Entry i lives at byte i * 20 of the queue's endless byte space (segments of
`entries_per_file` entries, named by byte offset like RocketMQ's files).

Invariants:
  * min_offset <= max_offset; entries [min_offset, max_offset) are readable, every one with a
    size > 0, and their commit-log offsets strictly increase (the dispatcher appends in log
    order), which is what makes the binary searches below valid;
  * entries at or past max_offset are zero;
  * min_offset moves only forward, when retention drops the commit-log records the first
    entries point at.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

from longboat.store.segments import MappedSegment, SegmentChain

ENTRY = struct.Struct(">qiq")
ENTRY_SIZE = ENTRY.size  # 20


def pack_entries(offsets: Sequence[int], sizes: Sequence[int], codes: Sequence[int]) -> bytes:
    """The entries of consecutive records (commit-log offset, size, tags code each) in one
    struct call for a batch, instead of a call and a bytes object per message."""
    count = len(offsets)
    if count == 1:
        return ENTRY.pack(offsets[0], sizes[0], codes[0])
    fields: list[int] = [0] * (3 * count)
    fields[0::3] = offsets
    fields[1::3] = sizes
    fields[2::3] = codes
    return _entries_struct(count).pack(*fields)


@functools.lru_cache(maxsize=256)
def _entries_struct(count: int) -> struct.Struct:
    """`count` consecutive entries as one struct (batches come in few sizes)."""
    return struct.Struct(">" + "qiq" * count)


class ConsumeQueue:
    __slots__ = (
        "chain",
        "entries_per_file",
        "max_offset",
        "min_offset",
        "queue_id",
        "synced_offset",
        "topic",
    )

    def __init__(
        self,
        root: Path,
        topic: str,
        queue_id: int,
        entries_per_file: int,
        *,
        adopt: Callable[[Path], MappedSegment | None] | None = None,
    ) -> None:
        """`adopt(directory)` may give a new queue a ready-made first segment
        (queue_spares), sparing the send path the creation of its files."""
        self.topic = topic
        self.queue_id = queue_id
        self.entries_per_file = entries_per_file
        self.chain = SegmentChain(
            root / topic / str(queue_id),
            entries_per_file * ENTRY_SIZE,
            random_access=True,
            adopt=adopt,
        )
        self.min_offset = 0
        self.max_offset = 0
        self.synced_offset = 0

    # ------------------------------------------------------------------ loading

    def load(self, log_min_offset: int) -> None:
        """Map the files and find the ends: max just past the last written entry, min at the
        first entry whose record the commit log still holds.  The search for max stays below
        the last file's data end, so it reads (and keeps resident) only pages holding entries."""
        self.chain.load()
        first = self.chain.min_offset // ENTRY_SIZE
        last = self.chain.last
        end = max(first, last.data_end() // ENTRY_SIZE) if last is not None else first
        self.max_offset = self._first_where(first, end, lambda e: e[1] <= 0)
        self.min_offset = first
        self.synced_offset = self.max_offset
        self.move_min(log_min_offset)

    def _entry(self, offset: int) -> tuple[int, int, int]:
        raw = self.chain.read(offset * ENTRY_SIZE, ENTRY_SIZE)
        if raw is None:
            return (-1, 0, 0)
        return ENTRY.unpack(raw)

    def _first_where(self, lo: int, hi: int, pred: Callable[[tuple[int, int, int]], bool]) -> int:
        """The first offset in [lo, hi) whose entry satisfies the monotone `pred` (else hi)."""
        while lo < hi:
            mid = (lo + hi) // 2
            if pred(self._entry(mid)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    # ------------------------------------------------------------------ writing

    def append(self, queue_offset: int, entries: bytes) -> None:
        """Write packed entries starting at `queue_offset` (which must be max_offset except in
        recovery of damaged files), splitting at segment ends."""
        pos = queue_offset * ENTRY_SIZE
        view = entries
        cap = self.chain.capacity
        while view:
            room = cap - pos % cap
            part = view[:room]
            self.chain.segment_for_write(pos).write(pos, part)
            pos += len(part)
            view = view[room:]
        self.max_offset = max(self.max_offset, pos // ENTRY_SIZE)

    def truncate_to_log(self, log_offset: int) -> None:
        """Drop every entry pointing at or past commit-log offset `log_offset`."""
        cut = self._first_where(
            self.min_offset, self.max_offset, lambda e: e[1] <= 0 or e[0] + e[1] > log_offset
        )
        if cut < self.max_offset:
            self.chain.truncate(cut * ENTRY_SIZE)
            self.max_offset = cut
            self.min_offset = min(self.min_offset, cut)
            self.synced_offset = min(self.synced_offset, cut)

    # ------------------------------------------------------------------ reading

    def read_entries(self, offset: int, count: int) -> bytes:
        """Up to `count` packed entries from `offset`, stopping at max_offset or a segment end."""
        count = min(count, self.max_offset - offset)
        if count <= 0:
            return b""
        pos = offset * ENTRY_SIZE
        cap = self.chain.capacity
        count = min(count, (cap - pos % cap) // ENTRY_SIZE)
        return self.chain.read(pos, count * ENTRY_SIZE) or b""

    def entry(self, offset: int) -> tuple[int, int, int] | None:
        """(commit-log offset, size, tags code) of one entry, or None outside [min, max)."""
        if not self.min_offset <= offset < self.max_offset:
            return None
        e = self._entry(offset)
        return e if e[1] > 0 else None

    def offset_by_store_time(self, timestamp_ms: int, store_time_at: Callable[[int], int]) -> int:
        """The first offset whose message was stored at or after `timestamp_ms` (max_offset if
        none).  Store times never decrease along a queue, so the search sees a sorted list and
        lands on the first of equal times, not in the middle of a batch."""
        lo, hi = self.min_offset, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            e = self._entry(mid)
            if e[1] <= 0 or store_time_at(e[0]) >= timestamp_ms:
                hi = mid
            else:
                lo = mid + 1
        return lo

    # ------------------------------------------------------------------ retention

    def move_min(self, log_min_offset: int) -> None:
        """Advance min_offset past entries whose records are gone; delete whole files of them."""
        segments = self.chain.segments
        drop = 0
        for seg in segments[:-1]:
            last_entry = (seg.end // ENTRY_SIZE) - 1
            if last_entry < self.max_offset and self._entry(last_entry)[0] >= log_min_offset:
                break
            drop += 1
        if drop:
            self.chain.drop_head(drop)
        first = max(self.min_offset, self.chain.min_offset // ENTRY_SIZE)
        self.min_offset = self._first_where(
            first, self.max_offset, lambda e: e[1] > 0 and e[0] >= log_min_offset
        )

    def sync(self) -> None:
        """Make the entries appended since the last sync durable."""
        end = self.max_offset
        if end > self.synced_offset:
            self.chain.sync(self.synced_offset * ENTRY_SIZE, end * ENTRY_SIZE)
            self.synced_offset = end

    def close(self) -> None:
        self.chain.close()
