"""Consumer offsets: group → topic → queue → the next offset the group will consume.

Kept in memory, snapshotted as RocketMQ's `config/consumerOffset.json` shape
(`{"offsetTable": {"topic@group": {"queueId": offset}}}`) so an operator who knows RocketMQ
reads it at a glance, plus `journalGeneration`, the first journal file the snapshot does not
cover.  Every change is also appended to the journal (see offset_journal) before it is
answered, and the snapshot compacts the journal in the background.

What a crash keeps (docs/guarantees.md, tests/broker/test_offsets_survive_kill.py):
  * a killed process: every change (the journal line was written before the answer);
  * a machine crash under SYNC_FLUSH: every change whose `commit` future resolved;
  * a machine crash under ASYNC_FLUSH: all but the last flush interval's changes, and
    always a group's first offset on a queue (its future is awaited in both modes), so a
    group that ever committed resumes from an offset it committed, never from where its
    consume-from setting would start a new group.
"""

from __future__ import annotations

import concurrent.futures
import threading
from pathlib import Path
from typing import Any

from longboat.store.flush import FlushService
from longboat.store.json_file import read_json, write_json_atomic
from longboat.store.offset_journal import OffsetJournal

_SEP = "@"
Durable = concurrent.futures.Future[bool]


class ConsumerOffsetTable:
    def __init__(
        self, path: Path, *, sync_every_commit: bool = False, flush_interval_s: float = 0.5
    ) -> None:
        self.path = path
        self._table: dict[str, dict[str, dict[int, int]]] = {}
        self._lock = threading.Lock()
        self._dirty = False
        self._sync_every_commit = sync_every_commit
        self._journal = OffsetJournal(path)
        self._flusher = FlushService(
            self._journal.sync, flush_interval_s, name="longboat-offsets-flush"
        )
        # (group, topic, queue) → the journal record of its first offset, until a sync covers it
        # (every update of the queue waits for that sync before it is answered).
        self._first_unsynced: dict[tuple[str, str, int], int] = {}
        self._open = False

    def load(self) -> None:
        """Read the snapshot if there is one (none is an empty table), replay the journal
        after it and start a new journal generation with its flush thread."""
        data = read_json(self.path) or {}
        table: dict[str, dict[str, dict[int, int]]] = {}
        for key, queues in (data.get("offsetTable") or {}).items():
            topic, sep, group = key.rpartition(_SEP)
            if not sep:
                continue
            table.setdefault(group, {})[topic] = {int(q): int(o) for q, o in queues.items()}
        covered = int(data.get("journalGeneration") or 0)
        replayed = False
        with self._lock:
            self._table = table
            for record in self._journal.replay(covered):
                self._apply(record)
                replayed = True
            self._dirty = replayed
        generation = max([covered, *self._journal.generations()]) + 1
        self._journal.open(generation)
        if not replayed:  # the older files are covered or hold nothing: none is needed again
            self._journal.drop_below(generation)
        if not self._open:
            self._open = True
            self._flusher.start()

    def close(self) -> None:
        """Snapshot the table and stop journaling; idempotent."""
        if not self._open:
            return
        self._open = False
        self.persist()
        self._flusher.stop()
        self._journal.close()

    def commit(
        self, group: str, topic: str, queue_id: int, offset: int, *, answered: bool = True
    ) -> Durable | None:
        """Set the group's offset.  `answered`: the caller's answer acknowledges the offset
        (UPDATE_CONSUMER_OFFSET); a pull carrying one answers with messages instead and does
        not wait.  Returns, for an answered change, a future resolved once it is durable
        against a machine crash when the caller must wait for that (under SYNC_FLUSH, and
        until the queue's first offset is on disk in every mode), else None."""
        key = (group, topic, queue_id)
        with self._lock:
            queues = self._table.setdefault(group, {}).setdefault(topic, {})
            previous = queues.get(queue_id)
            if previous != offset:
                seq = self._record(["c", topic, group, queue_id, offset])
                queues[queue_id] = offset
            else:  # idle pulls carry the same offset again and again: nothing to write
                seq = self._journal.written
            if previous is None:
                self._first_unsynced[key] = seq
            synced = self._journal.synced
            first_seq = self._first_unsynced.get(key)
            if first_seq is not None and synced >= first_seq:
                del self._first_unsynced[key]
                first_seq = None
        if not answered:
            return None
        if self._sync_every_commit:
            return None if synced >= seq else self._flusher.request(seq)
        if first_seq is not None:  # the queue's first offset is not on disk yet: wait for it
            return self._flusher.request(max(seq, first_seq))
        return None

    def _record(self, record: list[Any]) -> int:
        """Journal a change (caller holds the lock, so journal order is table order)."""
        self._dirty = True
        return self._journal.append(record)

    def _apply(self, record: list[Any]) -> None:
        """Replay one journal record onto the table (caller holds the lock)."""
        match record:
            case ["c", str(topic), str(group), int(queue_id), int(offset)]:
                self._table.setdefault(group, {}).setdefault(topic, {})[queue_id] = offset
            case ["g", str(group)]:
                self._table.pop(group, None)
            case ["t", str(topic)]:
                for topics in self._table.values():
                    topics.pop(topic, None)
            case ["k", str(topic), str(group), dict(queues)]:
                self._table.setdefault(group, {})[topic] = {int(q): o for q, o in queues.items()}

    def query(self, group: str, topic: str, queue_id: int) -> int | None:
        """The committed offset, or None when the group never committed one for the queue."""
        return self._table.get(group, {}).get(topic, {}).get(queue_id)

    def queue_offsets(self, group: str, topic: str) -> dict[int, int]:
        with self._lock:
            return dict(self._table.get(group, {}).get(topic, {}))

    def remove_group(self, group: str) -> None:
        with self._lock:
            if self._table.pop(group, None) is not None:
                self._record(["g", group])

    def remove_topic(self, topic: str) -> None:
        """Forget every group's offsets for a deleted topic."""
        with self._lock:
            removed = [topics.pop(topic, None) for topics in self._table.values()]
            if any(queues is not None for queues in removed):
                self._record(["t", topic])

    def snapshot(self) -> dict[str, dict[str, dict[int, int]]]:
        """A deep copy: group → topic → queue → offset."""
        with self._lock:
            return {g: {t: dict(q) for t, q in topics.items()} for g, topics in self._table.items()}

    def keyed(self) -> dict[str, dict[int, int]]:
        """The file's (and GET_ALL_CONSUMER_OFFSET's) form: "topic@group" → queue → offset."""
        with self._lock:
            return self._keyed()

    def _keyed(self) -> dict[str, dict[int, int]]:
        return {
            f"{topic}{_SEP}{group}": dict(queues)
            for group, topics in self._table.items()
            for topic, queues in topics.items()
        }

    def take(self, keyed: dict[str, dict[int, int]]) -> None:
        """A slave takes its master's offsets (RocketMQ's putAll): each "topic@group" entry
        replaces the slave's own; groups and topics the master lacks are kept."""
        with self._lock:
            for key, queues in keyed.items():
                topic, sep, group = key.rpartition(_SEP)
                if sep:
                    self._table.setdefault(group, {})[topic] = dict(queues)
                    self._record(["k", topic, group, {str(q): o for q, o in queues.items()}])

    @property
    def dirty(self) -> bool:
        return self._dirty

    def persist(self) -> None:
        """Snapshot the table atomically (temp file, fsync, rename, fsync the directory) and
        drop the journal files it covers.  The journal moves to a new generation under the
        lock that takes the snapshot, so every change is in the snapshot or in a newer file."""
        with self._lock:
            table = {
                k: {str(q): o for q, o in queues.items()} for k, queues in self._keyed().items()
            }
            self._dirty = False
            covered = self._journal.generation + 1
            self._journal.open(covered)
        try:
            write_json_atomic(self.path, {"offsetTable": table, "journalGeneration": covered})
        except OSError:
            self._dirty = True  # the journal still holds everything; try again next round
            raise
        self._journal.drop_below(covered)
