"""The key index's slot table, kept in a private map of its file and written back by pages.

A slot write lands on a random page of the table (20 MB by default).  Through a shared map,
every sync cleans the pages it writes out and the kernel protects them again, so the next
write to each costs a fault: with a sync every checkpoint, one fault per page per second
under load, several microseconds each on a virtual machine.  A private (copy-on-write) map
takes one fault per page for the file's whole life: reads of pages never written still come
from the file's cache, written ones are the process's own, and a sync copies the pages
written since the last one into the file with `pwrite`.

What the file holds is therefore only as new as the last write-back: a crash loses the slot
writes since, which leaves their entries counted but unreachable until recovery re-indexes
from the checkpoint, exactly the state the index's invariants already allow.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_PAGE = mmap.PAGESIZE
SLOT_SIZE = 4
# Slots noted per page of the table past which a write-back copies the whole table: by then
# nearly every page was written to (all but e^-4, ~2 %, of them at random), and copying them
# all costs less than working out which (and keeps what waits for a write-back small).
WHOLE_TABLE_AT = 4


@dataclass(slots=True)
class Written:
    """Slot writes not yet in the file: the slots as noted, or the whole table."""

    batches: list[list[int]] = field(default_factory=list)
    count: int = 0  # slots in `batches`
    whole: bool = False


class SlotTable:
    """`slots` native unsigned ints at byte `begin` of the file at `path` (`begin` may share
    its page with a header written elsewhere: write-back starts at `begin`, never before)."""

    def __init__(self, path: Path, begin: int, slots: int) -> None:
        self.path = path
        self._begin = begin
        self._end = begin + slots * SLOT_SIZE
        fd = os.open(path, os.O_RDONLY)
        try:
            self._map = mmap.mmap(fd, self._end, access=mmap.ACCESS_COPY)
        finally:
            os.close(fd)
        # Read and written as native ints: an index operation, several times cheaper than a
        # struct call.  Released before the map closes.
        self.heads = memoryview(self._map)[begin : self._end].cast("I")
        pages = (self._end - 1) // _PAGE - begin // _PAGE + 1
        self._whole_at = WHOLE_TABLE_AT * pages
        self._pending = Written()
        # A checkpoint writes back outside the store's lock; retention may delete the file
        # meanwhile (`delete_expired` is public): the map is never unmapped under a write-back.
        self._mapped = threading.Lock()
        self._dropped = False

    def written(self, slots: list[int]) -> None:
        """Note slots written (a list the caller no longer changes); the pages they lie on
        are worked out at write-back, off the append path."""
        pending = self._pending
        if pending.whole:
            return
        pending.batches.append(slots)
        pending.count += len(slots)
        if pending.count >= self._whole_at:
            pending.batches = []
            pending.whole = True

    def take_written(self) -> Written:
        """The slot writes noted so far, for `write_back`; the caller serialises this with
        `written` (the store's lock), so no note falls between the two."""
        taken, self._pending = self._pending, Written()
        return taken

    def write_back(self, written: Written) -> None:
        """Copy the pages holding `written` slots into the file, a run of adjacent pages per
        call; the caller syncs the file afterwards."""
        if written.whole:
            runs: list[tuple[int, int]] = [(self._begin, self._end)]
        else:
            begin = self._begin
            pages = {(begin + SLOT_SIZE * s) // _PAGE for batch in written.batches for s in batch}
            runs = [
                (max(first * _PAGE, begin), min((last + 1) * _PAGE, self._end))
                for first, last in _runs(sorted(pages))
            ]
        if not runs:
            return
        with self._mapped:
            if self._dropped:
                return  # the file was deleted meanwhile: nothing is left to keep
            fd = os.open(self.path, os.O_WRONLY)
            try:
                with memoryview(self._map) as view:
                    for lo, hi in runs:
                        os.pwrite(fd, view[lo:hi], lo)
            finally:
                os.close(fd)

    def close(self) -> None:
        """Write back what is still noted, then unmap."""
        self.write_back(self.take_written())
        self.drop()

    def drop(self) -> None:
        """Unmap without writing back (the file is being deleted); a write-back in progress
        finishes first, and later ones do nothing."""
        with self._mapped:
            self._dropped = True
            self.heads.release()
            self._map.close()


def _runs(pages: list[int]) -> Iterator[tuple[int, int]]:
    """(first, last) of each run of consecutive numbers in sorted `pages`."""
    if not pages:
        return
    first = prev = pages[0]
    for page in pages[1:]:
        if page != prev + 1:
            yield first, prev
            first = page
        prev = page
    yield first, prev
