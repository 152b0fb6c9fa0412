"""A broker's epoch file (RocketMQ 5's epochFileCheckpoint): which master term wrote which
part of its commit log.

One entry per term this log holds, `(epoch, start offset)`, in order; an entry ends where
the next starts, the last at the log's end.  A master appends its epoch at its log's end when
elected; a slave takes its master's entries as it starts following it (its log is then a
prefix of the master's).  Two logs agree up to the end of the last term they both hold from
the same start offset (`consistent_point`): what lies past it in a rejoining former master
was never replicated, and is cut (`truncate.py`).
"""

from __future__ import annotations

from pathlib import Path

from longboat.protocol.controller import EpochEntry
from longboat.store.json_file import read_json, write_json_atomic

EPOCH_FILE = "epochFileCheckpoint"


class EpochFile:
    def __init__(self, root: Path) -> None:
        self.path = root / EPOCH_FILE
        self.entries: list[tuple[int, int]] = []

    def load(self) -> None:
        try:
            data = read_json(self.path)
        except (FileNotFoundError, ValueError):
            data = None
        if isinstance(data, list):
            self.entries = [(int(e[0]), int(e[1])) for e in data]

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, [list(e) for e in self.entries])

    @property
    def last_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else 0

    def append(self, epoch: int, start_offset: int) -> None:
        """This broker became master at `epoch` with its log ending at `start_offset`."""
        if self.entries and self.entries[-1][0] >= epoch:
            return
        self.entries.append((epoch, start_offset))
        self._save()

    def replace(self, entries: list[tuple[int, int]]) -> None:
        self.entries = list(entries)
        self._save()

    def with_ends(self, max_offset: int) -> tuple[EpochEntry, ...]:
        out = []
        for i, (epoch, start) in enumerate(self.entries):
            end = self.entries[i + 1][1] if i + 1 < len(self.entries) else max_offset
            out.append(EpochEntry(epoch, start, end))
        return tuple(out)


def consistent_point(local: tuple[EpochEntry, ...], remote: tuple[EpochEntry, ...]) -> int | None:
    """The offset up to which two logs hold the same records: the end of the newest term
    both hold from the same start, capped by both ends.  None when they share no term (a log
    without entries is taken as it is)."""
    theirs = {e.epoch: e for e in remote}
    for entry in reversed(local):
        other = theirs.get(entry.epoch)
        if other is not None and other.start_offset == entry.start_offset:
            return min(entry.end_offset, other.end_offset)
    return None
