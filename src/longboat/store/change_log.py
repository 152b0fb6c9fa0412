"""An append-only log of changes to a JSON table, beside the table's snapshot file.

A table that changes one row at a time (topics: one per creation, thousands in a burst) would
pay a rewrite of every row per change if it were persisted whole; here a change costs one
line appended (fdatasync'd at once or at the owner's next `sync`), whatever the table's size,
and the snapshot is rewritten only when the log has grown as long as the snapshot it follows
(`compact`, from a background thread), so the amortised cost per change stays constant.

    <snapshot>.log: one JSON object per line, in the order the changes were made

Crash safety: a line is whole once its write returned (against a process crash) or once it
was fdatasync'd (against a power loss); a crash mid-append leaves a torn last line, which
`replay` drops and cuts from the file.  Compaction writes the snapshot atomically first and
only then drops the lines it covers, keeping any appended meanwhile; after a crash between
the two the log still holds lines the snapshot covers, which the owner skips (topics: by
their version counter).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from longboat.store.json_file import fsync_dir, write_bytes_atomic

log = logging.getLogger(__name__)


class ChangeLog:
    """Caller: the owner of one table, under its own lock for every method."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records = 0  # lines in the file
        self._fd: int | None = None
        self._unsynced = False

    def replay(self) -> Iterator[dict[str, Any]]:
        """The changes logged, oldest first, one at a time; a torn last line is cut from the
        file once the iteration ends (the caller iterates to the end).

        One at a time because a table's restart must not hold its whole log parsed: 100,000
        parsed changes are ~100 MB of short-lived objects allocated among the table's own,
        and the heap they leave behind stays fragmented (most of it never returns to the
        system) for the life of the process."""
        good = records = 0
        try:
            file = self.path.open("rb")
        except FileNotFoundError:
            self.records = 0
            return
        with file:
            for line in file:
                try:
                    change = orjson.loads(line) if line.endswith(b"\n") else None
                except orjson.JSONDecodeError:
                    change = None
                if not isinstance(change, dict):
                    break
                good += len(line)
                records += 1
                yield change
            size = os.fstat(file.fileno()).st_size
        if good < size:
            log.warning(
                "%s: cut %d bytes of an unfinished change at its end", self.path.name, size - good
            )
            os.truncate(self.path, good)
        self.records = records

    def append(self, change: dict[str, Any], *, sync: bool) -> None:
        """Log one change; with `sync` durably before returning, else in the page cache
        (it survives the process dying; `sync` makes it survive the machine dying).
        Raises OSError on I/O failure."""
        fd = self._open()
        os.write(fd, orjson.dumps(change) + b"\n")
        if sync:
            os.fdatasync(fd)
        else:
            self._unsynced = True
        self.records += 1

    def sync(self) -> None:
        """Make the changes appended without `sync` durable."""
        if self._unsynced and self._fd is not None:
            self._unsynced = False
            os.fdatasync(self._fd)

    def position(self) -> int:
        """Bytes logged so far (what a compaction's snapshot covers)."""
        return os.fstat(self._open()).st_size

    def drop_before(self, position: int) -> None:
        """Forget the changes in the first `position` bytes (a snapshot now holds them)."""
        fd = self._open()
        rest = os.pread(fd, os.fstat(fd).st_size - position, position)
        self.close()
        write_bytes_atomic(self.path, rest)  # durable, whatever was appended unsynced
        self._unsynced = False
        self.records = rest.count(b"\n")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            if created:
                fsync_dir(self.path.parent)
        return self._fd
