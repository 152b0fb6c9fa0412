"""The pop table on disk: a snapshot (`config/popState.json`) plus a journal of the
transitions since (`config/popState.log`, one JSON array per line).

Each transition is one `write` to the journal (opened O_APPEND) as it happens, before the
client is answered, so an ack answered OK survives the broker process dying right after
(the page cache outlives the process).  `file.sync` makes the records durable against a
machine crash too; `PopService` decides when, as the commit log's flush mode does for
messages: before an ack is answered under SYNC_FLUSH (one fsync shared by the acks waiting
meanwhile), once per flush interval under ASYNC_FLUSH (a machine crash then loses at most
that interval's acks, whose messages are delivered again).

`compact` writes a fresh snapshot atomically and only then empties the journal; replaying
records the snapshot already holds changes nothing (see `PopTable.restore`), so a crash
between the two steps is harmless.  A torn last line (a crash mid-write) is ignored.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import orjson

from longboat.broker.core.pop_table import Record
from longboat.store.journal_file import JournalFile
from longboat.store.json_file import read_json, write_json_atomic

log = logging.getLogger(__name__)


class PopJournal:
    def __init__(self, config_dir: Path) -> None:
        self.snapshot_path = config_dir / "popState.json"
        self.journal_path = config_dir / "popState.log"
        # Its `sync` (on the flush thread) covers the records a compaction folded into the
        # snapshot too: the snapshot is written durably before the file is emptied.
        self.file = JournalFile()
        self.records_since_compaction = 0

    def load(self) -> tuple[list[list[Any]], list[Record]]:
        """(snapshot, journal records written after it)."""
        data = read_json(self.snapshot_path) or {}
        records: list[Record] = []
        try:
            raw = self.journal_path.read_bytes()
        except FileNotFoundError:
            raw = b""
        lines = raw.split(b"\n")
        for i, line in enumerate(lines):
            if not line:
                continue
            try:
                records.append(tuple(orjson.loads(line)))
            except orjson.JSONDecodeError:
                if i < len(lines) - 2:
                    raise ValueError(f"{self.journal_path}: line {i + 1} is damaged") from None
                log.warning("%s: ignoring a torn last record", self.journal_path)
        return list(data.get("queues", [])), records

    def open(self) -> None:
        self.journal_path.parent.mkdir(parents=True, exist_ok=True)
        self.file.attach(os.open(self.journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))

    def append(self, record: Record) -> None:
        """Journal a transition; none before `open` (the table replaying the journal)."""
        if self.file.attached:
            self.file.append(orjson.dumps(record) + b"\n")
            self.records_since_compaction += 1

    def compact(self, snapshot: list[list[Any]]) -> None:
        """Snapshot the table, then empty the journal."""
        write_json_atomic(self.snapshot_path, {"queues": snapshot})
        self.file.truncate()
        self.records_since_compaction = 0

    def close(self) -> None:
        self.file.close()
