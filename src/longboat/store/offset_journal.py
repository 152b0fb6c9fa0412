"""The consumer-offset journal: every change to the offset table, appended as it happens.

The table's snapshot (`consumerOffset.json`) is rewritten every few seconds; what changed since
lives only here.  Each change is one JSON line written with a single `write` before the broker
answers, so a killed process (the page cache survives it) loses nothing; `sync` makes the lines
durable against a machine crash too (the table decides when: before answering under
SYNC_FLUSH, once per flush interval under ASYNC_FLUSH).

Files are numbered generations, `consumerOffset.journal.<n>`.  Compaction rotates to a new
generation (the old one fsynced and closed first), writes a snapshot that records which
generation it covers up to, and only then deletes the older files.  A crash at any step leaves
a snapshot plus every generation written after it, so replay is always: the snapshot, then each
newer generation in order.  A line cut short by a crash (no newline, or not JSON) is the end of
its file: its change was never acknowledged.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from longboat.store.journal_file import JournalFile
from longboat.store.json_file import fsync_dir

_PREFIX = ".journal."


class OffsetJournal:
    def __init__(self, snapshot_path: Path) -> None:
        self._dir = snapshot_path.parent
        self._stem = snapshot_path.stem
        self._file = JournalFile()
        self.generation = 0

    def _path(self, generation: int) -> Path:
        return self._dir / f"{self._stem}{_PREFIX}{generation}"

    def generations(self) -> list[int]:
        """The journal files on disk, oldest first."""
        found = []
        for path in self._dir.glob(f"{self._stem}{_PREFIX}*"):
            suffix = path.name.rpartition(".")[2]
            if suffix.isdigit():
                found.append(int(suffix))
        return sorted(found)

    def replay(self, from_generation: int) -> Iterator[list[Any]]:
        """Every complete record of the generations >= `from_generation`, in order."""
        for generation in self.generations():
            if generation < from_generation:
                continue
            for line in self._path(generation).read_bytes().split(b"\n")[:-1]:
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    break  # a torn write: nothing after it was acknowledged
                if isinstance(record, list) and record:
                    yield record

    def open(self, generation: int) -> None:
        """Start writing `generation` (a new, empty file); older files stay until `drop_below`."""
        self._dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path(generation), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        fsync_dir(self._dir)  # the file itself must survive before a line in it is durable
        self._file.attach(fd)
        self.generation = generation

    def append(self, record: list[Any]) -> int:
        """Write one record; returns its sequence number for `sync`'s coverage."""
        return self._file.append(orjson.dumps(record) + b"\n")

    def sync(self) -> int:
        """fsync the current file; returns the sequence number every record up to is durable."""
        return self._file.sync()

    @property
    def written(self) -> int:
        """The sequence number of the last record written."""
        return self._file.written

    @property
    def synced(self) -> int:
        """The sequence number every record up to is durable."""
        return self._file.synced

    def drop_below(self, generation: int) -> None:
        """Delete the files a durable snapshot covers."""
        for old in self.generations():
            if old < generation:
                self._path(old).unlink(missing_ok=True)

    def close(self) -> None:
        self._file.close()
