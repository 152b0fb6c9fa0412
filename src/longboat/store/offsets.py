"""Consumer offsets: group → topic → queue → the next offset the group will consume.

Kept in memory, persisted as RocketMQ's `config/consumerOffset.json` shape
(`{"offsetTable": {"topic@group": {"queueId": offset}}}`) so an operator who knows RocketMQ
reads it at a glance.  Persisting is atomic (see json_file); what was committed after the last
persist is lost in a crash, which consumers tolerate: they re-consume from the older offset
(at-least-once), never skip.
"""

from __future__ import annotations

import threading
from pathlib import Path

from longboat.store.json_file import read_json, write_json_atomic

_SEP = "@"


class ConsumerOffsetTable:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._table: dict[str, dict[str, dict[int, int]]] = {}
        self._lock = threading.Lock()
        self._dirty = False

    def load(self) -> None:
        """Read the file if there is one (a missing file is an empty table)."""
        data = read_json(self.path)
        table: dict[str, dict[str, dict[int, int]]] = {}
        for key, queues in ((data or {}).get("offsetTable") or {}).items():
            topic, sep, group = key.rpartition(_SEP)
            if not sep:
                continue
            table.setdefault(group, {})[topic] = {int(q): int(o) for q, o in queues.items()}
        with self._lock:
            self._table = table
            self._dirty = False

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        with self._lock:
            self._table.setdefault(group, {}).setdefault(topic, {})[queue_id] = offset
            self._dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int | None:
        """The committed offset, or None when the group never committed one for the queue."""
        return self._table.get(group, {}).get(topic, {}).get(queue_id)

    def queue_offsets(self, group: str, topic: str) -> dict[int, int]:
        with self._lock:
            return dict(self._table.get(group, {}).get(topic, {}))

    def remove_group(self, group: str) -> None:
        with self._lock:
            if self._table.pop(group, None) is not None:
                self._dirty = True

    def remove_topic(self, topic: str) -> None:
        """Forget every group's offsets for a deleted topic."""
        with self._lock:
            for topics in self._table.values():
                if topics.pop(topic, None) is not None:
                    self._dirty = True

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
                    self._dirty = True

    @property
    def dirty(self) -> bool:
        return self._dirty

    def persist(self) -> None:
        """Write the table atomically (temp file, fsync, rename, fsync the directory)."""
        with self._lock:
            table = {
                k: {str(q): o for q, o in queues.items()} for k, queues in self._keyed().items()
            }
            self._dirty = False
        write_json_atomic(self.path, {"offsetTable": table})
