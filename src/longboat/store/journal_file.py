"""The file a journal appends to while a flush thread fsyncs it (the consumer-offset journal,
the broker's pop-state journal).

Each record is one `write` of a whole line, so a killed process (the page cache survives it)
loses none.  `written` and `synced` count records: the flush service's "offsets", so a caller
can wait until a sync covers its record (`store.flush`).

Invariants (under one lock, as the loop appends and the flush thread syncs):
  * `synced` never passes a record whose bytes an fsync has not covered: a sync counts only
    what was written before it took its duplicate of the file descriptor, and replacing the
    file fsyncs the old one before the new one takes writes;
  * a sync never fsyncs a closed descriptor: it works on its own duplicate.
"""

from __future__ import annotations

import os
import threading


class JournalFile:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd = -1
        self.written = 0
        self.synced = 0

    def attach(self, fd: int) -> None:
        """Write to `fd` from now on; the file written so far is fsynced and closed first."""
        with self._lock:
            old, self._fd = self._fd, fd
            if old >= 0:  # under the lock: a sync reporting lines of the old file covers them
                os.fsync(old)
                os.close(old)

    @property
    def attached(self) -> bool:
        return self._fd >= 0

    def append(self, line: bytes) -> int:
        """Write one record (a whole line); its sequence number, for `sync`'s coverage.
        OSError when it could not be written (or no file is attached)."""
        with self._lock:
            os.write(self._fd, line)
            self.written += 1
            return self.written

    def sync(self) -> int:
        """fsync the file; returns the sequence number every record up to is durable."""
        with self._lock:
            written = self.written
            if written == self.synced or self._fd < 0:
                return written
            # A duplicate, so a close meanwhile cannot pull it away; appends go on meanwhile.
            fd = os.dup(self._fd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.synced = max(self.synced, written)
        return written

    def truncate(self) -> None:
        """Empty the file (what it held is durable elsewhere: a snapshot written before)."""
        with self._lock:
            if self._fd >= 0:
                os.ftruncate(self._fd, 0)

    def close(self) -> None:
        """fsync and close the file; appends write nothing from now on."""
        with self._lock:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            os.fsync(fd)
            os.close(fd)
