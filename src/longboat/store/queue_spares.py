"""Consume-queue files made ahead of need, so a queue's first message does not wait for the
file system.

A new queue needs a topic directory, a queue directory and a first segment file, created,
sized and mapped: file system metadata operations of 0.1-0.6 ms each on ext4 under load
(inode allocations, journal), more than the rest of a send, and on the send path (the event
loop appends).  A thread (`longboat-queue-spares`) keeps spare queue directories under
`<consume queue root>/.spare/` (KEEP of them, twice as many each time a new queue found none
ready, up to MOST), each holding an empty first segment of the queues' size (sparse, but its
first page allocated) already mapped.  A new queue `take`s one: its entries
are written into that map at once, and the thread moves the directory to where the queue
lives (creating the topic's directory if needed) right after, off the send path.

Until the move is done the segment's file is not at its path: whatever goes through the path
(sync, truncation, deletion) waits for the move first (`MappedSegment.placed`), so nothing is
reported durable before it is where recovery will look.  A spare found at open with data in
it (the process died between a take and its move) is dropped: its entries were never
checkpointed, and recovery re-creates them from the commit log.  Spares left empty by a run
are reused by the next; the queue table ignores `.spare` (no topic name starts with a dot).
"""

from __future__ import annotations

import logging
import mmap
import os
import shutil
import threading
from pathlib import Path

from longboat.store.segments import MappedSegment, segment_name
from longboat.store.worker_thread import WorkerThread

log = logging.getLogger(__name__)

SPARE_DIR = ".spare"
# Spares kept ready at first, and at most: each time a new queue finds none ready the reserve
# doubles.  A burst of first messages into new queues (a few thousand a second on one
# connection) outruns the thread on a busy disk, where a spare's directory and file take a
# millisecond or more; an idle store keeps only the first few.
KEEP = 32
MOST = 512
PAGE = mmap.PAGESIZE
_ENTRY_SIZE = 20  # a consume-queue entry: a spare holding data starts with a non-zero one


class QueueSpares(WorkerThread):
    def __init__(self, root: Path, segment_size: int, *, keep: int = KEEP) -> None:
        super().__init__("longboat-queue-spares")
        self._dir = root / SPARE_DIR
        self._segment_size = segment_size
        self._keep = keep
        self._most = max(keep, MOST)
        # Each spare with the event its move will set, made here rather than in `take`: an
        # Event (a Condition and its locks) costs more than the rest of a take.
        self._ready: list[tuple[Path, MappedSegment, threading.Event]] = []
        self._moves: list[tuple[Path, Path, threading.Event]] = []  # spare dir, queue dir
        self._next = 0

    def start(self) -> None:
        """Take over the empty spares a previous run left (dropping any other), then start
        making more."""
        self._dir.mkdir(parents=True, exist_ok=True)
        for path in sorted(self._dir.iterdir()):
            if path.name.isdigit():
                self._next = max(self._next, int(path.name) + 1)
            segment = path / segment_name(0)
            if len(self._ready) < self._most and self._empty(segment):
                self._ready.append((path, self._map(segment), threading.Event()))
            else:
                shutil.rmtree(path, ignore_errors=True)
        self._keep = max(self._keep, len(self._ready))  # the reserve the last run grew to
        self._thread.start()

    def _empty(self, segment: Path) -> bool:
        """A spare of the right size whose first entry is unwritten (its first bytes read,
        not the whole sparse file)."""
        try:
            with segment.open("rb") as f:
                size = os.fstat(f.fileno()).st_size
                return size == self._segment_size and f.read(_ENTRY_SIZE) == bytes(_ENTRY_SIZE)
        except OSError:
            return False

    def take(self, queue_dir: Path) -> MappedSegment | None:
        """A mapped, empty first segment for the new queue at `queue_dir` (which must not
        exist yet), moved there by the thread soon; None when no spare is ready (the caller
        then creates the files itself)."""
        with self._cond:
            if not self._ready:
                self._keep = min(2 * self._keep, self._most)
                self._cond.notify()
                return None
            spare, segment, placed = self._ready.pop()
            segment.path = queue_dir / segment_name(0)
            segment.placed = placed
            self._moves.append((spare, queue_dir, placed))
            self._cond.notify()
        return segment

    def close(self) -> None:
        """Finish the moves taken, stop the thread, unmap the spares (they stay on disk)."""
        self._stop_thread()
        for _, segment, _ in self._ready:
            segment.close()
        self._ready = []

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._moves and (self._stopping or len(self._ready) >= self._keep):
                    if self._stopping:
                        return
                    self._cond.wait()
                moves, self._moves = self._moves, []
                make = None if moves else self._dir / str(self._next)
                if make is not None:
                    self._next += 1
            for spare, queue_dir, placed in moves:
                self._move(spare, queue_dir)
                placed.set()
            if make is None:
                continue
            try:
                segment = self._make(make)
            except OSError as exc:  # a full disk: new queues create their own files
                log.warning("consume queues: cannot make a spare (%s); retrying in 10 s", exc)
                with self._cond:
                    self._cond.wait(10.0)
                continue
            placed = threading.Event()
            with self._cond:
                self._ready.append((make, segment, placed))

    @staticmethod
    def _move(spare: Path, queue_dir: Path) -> None:
        try:
            queue_dir.parent.mkdir(exist_ok=True)
            os.rename(spare, queue_dir)
        except OSError as exc:
            # The segment's entries are only in the spare's file: recovery re-creates them
            # from the commit log (its syncs found no file, so no checkpoint covered them).
            log.error("consume queue %s: its first file could not be moved in: %s", queue_dir, exc)

    def _make(self, path: Path) -> MappedSegment:
        path.mkdir()
        segment = path / segment_name(0)
        fd = os.open(segment, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, self._segment_size)
            # The first page's block allocated here: the first entries' write into the map is
            # then a page-cache hit, not a block allocation inside the send.
            os.pwrite(fd, bytes(min(PAGE, self._segment_size)), 0)
        finally:
            os.close(fd)
        return self._map(segment)

    def _map(self, segment: Path) -> MappedSegment:
        return MappedSegment(segment, 0, self._segment_size, preallocate=False, random_access=True)
