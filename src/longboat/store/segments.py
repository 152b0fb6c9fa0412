"""Fixed-size, memory-mapped segment files named by the absolute offset of their first byte.

The commit log (1 GiB segments) and every consume queue (300,000 entries of 20 bytes) are both
an endless byte space cut into such files, so both sit on one `SegmentChain`.

Why mmap: on this stack a 300-byte read is a slice of the map (~0.3 us) against ~0.8 us for an
`os.pread`, a small append is a memcpy instead of a syscall, and a map closed under a reader
makes the reader's slice raise ValueError instead of reading a recycled file descriptor, so
reads need no lock.  Durability still goes through `os.fdatasync`, which writes back pages
dirtied through the map and, unlike `mmap.flush`, releases the GIL while the disk works.

A chain read at random (a consume queue: a pull reads a few entries, a load binary-searches
for the end) maps its files `random_access`: without it the first fault in a sparse file reads
around it, filling and mapping hundreds of KB of zero pages (measured: 0.44 MB of RSS and ~12 ms
per queue searched at open, 1-8 ms on a queue's first append, against 43 KB and 0.3 ms).
A new file's directory entry is made durable with the chain's next `sync`, not at creation: a
send that opens a new queue does not wait for a directory fsync, and nothing relies on the file
before a sync (recovery trusts only what a checkpoint recorded after syncing it).

Invariants:
  * segments are contiguous: segment k starts at first.start + k * capacity;
  * every file is exactly `capacity` bytes (short files are extended with zeros at load; how
    short they were is reported, because a short file means lost data);
  * bytes past the logical end of the data are zero, so a scan stops at the first zero size.
    `truncate` keeps this true by cutting the file and re-extending it (sparse, no writing).
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Callable
from pathlib import Path

from longboat.store.errors import StoreCorruptedError
from longboat.store.json_file import fsync_dir

NAME_DIGITS = 20


def segment_name(start: int) -> str:
    return f"{start:0{NAME_DIGITS}d}"


def sync_file(path: Path) -> None:
    """Write back every page of `path` dirtied through a map (the GIL is released while the
    disk works); a file deleted meanwhile by retention has nothing left to keep."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


class MappedSegment:
    """One file of a chain, mapped whole."""

    __slots__ = (
        "capacity",
        "end",
        "mm",
        "path",
        "placed",
        "preallocate",
        "random_access",
        "start",
    )

    def __init__(
        self,
        path: Path,
        start: int,
        capacity: int,
        *,
        preallocate: bool,
        random_access: bool = False,
    ) -> None:
        self.path = path
        self.start = start
        self.capacity = capacity
        self.end = start + capacity
        self.preallocate = preallocate
        self.random_access = random_access
        # Set while the file is still being moved to `path` (queue_spares): what goes through
        # the path waits for it.
        self.placed: threading.Event | None = None
        self.mm = self._map(0)

    def _wait_placed(self) -> None:
        if self.placed is not None:
            self.placed.wait()

    def _map(self, written: int) -> mmap.mmap:
        # A store through a map into a sparse file on a full disk is SIGBUS, which kills the
        # process; blocks reserved up front turn that into ENOSPC here, at a segment roll.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            new = size == 0 and not written
            if size != self.capacity:
                os.ftruncate(fd, self.capacity)
            if self.preallocate and written < self.capacity:
                try:
                    os.posix_fallocate(fd, written, self.capacity - written)
                except OSError:
                    # A file this call created goes again: left behind, it would make the
                    # next open allocate it too, and fail on the same full disk.
                    if new:
                        self.path.unlink(missing_ok=True)
                    raise
            mm = mmap.mmap(fd, self.capacity)
        finally:
            os.close(fd)
        if self.random_access:
            mm.madvise(mmap.MADV_RANDOM)
        return mm

    def write(self, offset: int, data: bytes) -> None:
        rel = offset - self.start
        self.mm[rel : rel + len(data)] = data

    def read(self, offset: int, size: int) -> bytes:
        rel = offset - self.start
        return self.mm[rel : rel + size]

    def sync(self) -> None:
        self._wait_placed()
        sync_file(self.path)

    def data_end(self) -> int:
        """An offset past which the file holds no data (the first hole after its first data,
        as the file system reports it; pages dirtied through a map count as data): a search
        for the end of the written bytes need not fault in the zero pages past it.  A file
        system that does not track holes reports the whole file."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            try:
                data = os.lseek(fd, 0, os.SEEK_DATA)
            except OSError:  # ENXIO: no data at all
                return self.start
            return self.start + min(os.lseek(fd, data, os.SEEK_HOLE), self.capacity)
        finally:
            os.close(fd)

    def zero_from(self, offset: int) -> None:
        """Make every byte from `offset` to the end zero; only while no reader holds the map."""
        rel = offset - self.start
        self._wait_placed()
        self.mm.close()
        os.truncate(self.path, rel)
        self.mm = self._map(rel)

    def close(self) -> None:
        self.mm.close()

    def delete(self) -> None:
        self._wait_placed()
        self.mm.close()
        self.path.unlink(missing_ok=True)


class SegmentChain:
    """The segments of one directory, in offset order.

    `segments` is replaced, never mutated, so a reader can take it and search it while the
    writer rolls or the retention job drops segments.
    """

    def __init__(
        self,
        directory: Path,
        capacity: int,
        *,
        preallocate: bool = False,
        random_access: bool = False,
        adopt: Callable[[Path], MappedSegment | None] | None = None,
    ) -> None:
        """`adopt(directory)`, when given, is asked for a ready-made first segment (offset 0,
        `capacity` bytes, mapped) for a chain with no file yet, to be moved into `directory`."""
        if capacity <= 0:
            raise ValueError(f"segment capacity must be positive, not {capacity}")
        self.directory = directory
        self.capacity = capacity
        self.preallocate = preallocate
        self.random_access = random_access
        self._adopt = adopt
        self.segments: tuple[MappedSegment, ...] = ()
        self._directory_unsynced = False  # a file created since the last sync

    def load(self) -> int | None:
        """Map the existing files.  Returns the lowest offset where a file was found shorter
        than `capacity` (data past it was lost), or None when every file was whole."""
        self.directory.mkdir(parents=True, exist_ok=True)
        found: list[tuple[int, Path]] = []
        for path in self.directory.iterdir():
            if path.name.isdigit() and len(path.name) == NAME_DIGITS and path.is_file():
                found.append((int(path.name), path))
        found.sort()
        short_at: int | None = None
        segments: list[MappedSegment] = []
        for start, path in found:
            if start % self.capacity:
                raise StoreCorruptedError(
                    f"{path} starts at {start}, not a multiple of the segment size "
                    f"{self.capacity}; was the store written with another segment size?"
                )
            if segments and start != segments[-1].end:
                raise StoreCorruptedError(
                    f"segment files missing in {self.directory} between offsets "
                    f"{segments[-1].end} and {start}"
                )
            size = path.stat().st_size
            if size < self.capacity and short_at is None:
                short_at = start + size
            segments.append(self._segment(path, start))
        self._set(segments)
        return short_at

    def _segment(self, path: Path, start: int) -> MappedSegment:
        return MappedSegment(
            path,
            start,
            self.capacity,
            preallocate=self.preallocate,
            random_access=self.random_access,
        )

    def _set(self, segments: list[MappedSegment]) -> None:
        self.segments = tuple(segments)

    @property
    def min_offset(self) -> int:
        return self.segments[0].start if self.segments else 0

    @property
    def last(self) -> MappedSegment | None:
        return self.segments[-1] if self.segments else None

    def find(self, offset: int) -> MappedSegment | None:
        """The segment holding `offset`, or None when it is below the first or past the last."""
        segments = self.segments  # one snapshot: contiguity makes the index arithmetic
        if not segments or offset < segments[0].start:
            return None
        i = (offset - segments[0].start) // self.capacity
        return segments[i] if i < len(segments) else None

    def segment_for_write(self, offset: int) -> MappedSegment:
        """The segment holding `offset`, creating it (and announcing it durably) if new."""
        seg = self.find(offset)
        if seg is not None:
            return seg
        start = offset - offset % self.capacity
        last = self.last
        if last is not None and start != last.end:
            raise StoreCorruptedError(f"write at {offset} would leave a gap after {last.end}")
        seg = None
        if last is None and start == 0 and self._adopt is not None:
            seg = self._adopt(self.directory)
        if seg is None:
            if last is not None:
                # An adopted first segment's directory is renamed into place by the spares'
                # thread: a second file created before that would race the rename.
                last._wait_placed()
            self.directory.mkdir(parents=True, exist_ok=True)
            seg = self._segment(self.directory / segment_name(start), start)
        self._directory_unsynced = True
        self._set([*self.segments, seg])
        return seg

    def read(self, offset: int, size: int) -> bytes | None:
        """`size` bytes at `offset` (within one segment), or None when not mapped (deleted)."""
        seg = self.find(offset)
        if seg is None:
            return None
        try:
            return seg.read(offset, size)
        except ValueError:  # closed under us by retention
            return None

    def truncate(self, offset: int) -> None:
        """Cut everything from `offset` on: zero the rest of its segment, delete later files."""
        keep: list[MappedSegment] = []
        for seg in self.segments:
            if seg.end <= offset:
                keep.append(seg)
            elif seg.start < offset or not keep:
                # The first segment stays even when cut whole: it carries the chain's base
                # offset (which retention may have moved past zero).
                seg.zero_from(max(offset, seg.start))
                keep.append(seg)
            else:
                seg.delete()
        self._set(keep)
        fsync_dir(self.directory)

    def drop_head(self, count: int) -> list[MappedSegment]:
        """Delete the first `count` segments; returns them (already closed)."""
        dropped = list(self.segments[:count])
        self._set(list(self.segments[count:]))
        for seg in dropped:
            seg.delete()
        if dropped:
            fsync_dir(self.directory)
        return dropped

    def sync(self, start: int, end: int) -> None:
        """Make bytes [start, end) durable, and the files created since the last sync."""
        for seg in self.segments:  # first: an adopted segment's move into the directory
            if seg.end > start and seg.start < end:
                seg.sync()
        if self._directory_unsynced:
            self._directory_unsynced = False
            fsync_dir(self.directory)

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
        self._set([])

    @property
    def disk_bytes(self) -> int:
        """Bytes the files occupy on disk (they are sparse until written)."""
        total = 0
        for seg in self.segments:
            try:
                total += seg.path.stat().st_blocks * 512
            except FileNotFoundError:
                pass
        return total
