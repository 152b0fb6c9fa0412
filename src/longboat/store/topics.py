"""Topic configs, persisted as RocketMQ's `config/topics.json` shape
(`{"dataVersion": {...}, "topicConfigTable": {name: TopicConfig}}`) plus a change log beside it.

Every change bumps the DataVersion (the name server compares it to tell a changed broker
from a heartbeat) and is written before the call returns: a created topic that vanished in a
crash would surprise every client routed to it.  A change is one line appended to
`topics.json.log` (change_log), not a rewrite of the table, so creating the 100,000th topic
costs what the first did; `compact` (the store's maintenance thread) folds the log into
`topics.json` once it holds as many changes as that snapshot holds topics.  Measured against
the snapshot, not the table: while topics are only created, the table grows as fast as the
log and stays ahead of it, so the log would never fold.  Against the snapshot, a burst of
creations folds each time the table has doubled: a rewrite costs a constant amortised per
change, and the log holds no more changes than the snapshot holds topics (past
COMPACT_AFTER_CHANGES) plus what one maintenance tick adds.  Durability follows the
commit log's: with `sync_each_change` (SYNC_FLUSH) each change is fdatasync'd before the call
returns; otherwise it survives a process crash at once and a power loss after the next
`sync` (every checkpoint), as an ASYNC_FLUSH message does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longboat.protocol.bodies import DataVersion, TopicConfig
from longboat.protocol.topic_names import kept_name
from longboat.store.change_log import ChangeLog
from longboat.store.json_file import read_json, write_json_atomic
from longboat.store.versioned_table import VersionedTable

# Below this many logged changes the log is left alone: a small table's log is cheap to replay.
COMPACT_AFTER_CHANGES = 1000


class TopicConfigTable(VersionedTable[TopicConfig]):
    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], float] = time.time,
        sync_each_change: bool = True,
    ) -> None:
        super().__init__(clock=clock)
        self.path = path
        self._sync_each_change = sync_each_change
        self._changes = ChangeLog(path.with_name(path.name + ".log"))
        self._snapshot_topics = 0  # in `topics.json` as last read or written

    def load(self) -> None:
        """The snapshot, then every change logged after it: a change the snapshot already
        holds (a crash between a compaction's snapshot and its cut of the log) is skipped by
        its version counter."""
        data = read_json(self.path) or {}
        table: dict[str, TopicConfig] = {}
        for cfg in (data.get("topicConfigTable") or {}).values():
            config = TopicConfig.from_dict(cfg)
            config.topic_name = kept_name(config.topic_name)
            table[config.topic_name] = config
        version = DataVersion.from_dict(data.get("dataVersion"))
        snapshot_topics = len(table)
        del data  # the parsed snapshot goes before the log is replayed
        with self._lock:
            for change in self._changes.replay():
                changed = DataVersion.from_dict(change.get("dataVersion"))
                if changed.counter <= version.counter:
                    continue
                version = changed
                if "put" in change:
                    config = TopicConfig.from_dict(change["put"])
                    table[config.topic_name] = config
                else:
                    table.pop(change["delete"], None)
            self._table = table
            self._version = version
            self._snapshot_topics = snapshot_topics

    @property
    def data_version(self) -> DataVersion:
        v = self._version
        return DataVersion(timestamp=v.timestamp, counter=v.counter)

    def get(self, topic: str) -> TopicConfig | None:
        return self._table.get(topic)

    def put(self, config: TopicConfig) -> None:
        """Create or replace a topic's config, durably."""
        with self._lock:
            self._table[config.topic_name] = config
            self._log({"put": config.to_dict()})

    def delete(self, topic: str) -> bool:
        """Remove a topic's config, durably; False when there was none."""
        with self._lock:
            if self._table.pop(topic, None) is None:
                return False
            self._log({"delete": topic})
            return True

    def _log(self, change: dict[str, Any]) -> None:
        self._next_version()
        change = {"dataVersion": self._version.to_dict(), **change}
        self._changes.append(change, sync=self._sync_each_change)

    def sync(self) -> None:
        """Make every change durable (caller: the maintenance thread, at each checkpoint)."""
        with self._lock:
            self._changes.sync()

    def compact(self) -> bool:
        """Fold the logged changes into the snapshot when the log holds as many changes as the
        snapshot holds topics (and at least COMPACT_AFTER_CHANGES); True when it did.  Changes
        go on meanwhile: the table is copied under the lock, written outside it.  Caller: the
        maintenance thread."""
        with self._lock:
            if self._changes.records < max(COMPACT_AFTER_CHANGES, self._snapshot_topics):
                return False
            table = dict(self._table)
            version = self._version
            covered = self._changes.position()
        write_json_atomic(
            self.path,
            {
                "dataVersion": version.to_dict(),
                "topicConfigTable": {n: c.to_dict() for n, c in table.items()},
            },
        )
        with self._lock:
            self._changes.drop_before(covered)
            self._snapshot_topics = len(table)
        return True

    def close(self) -> None:
        with self._lock:
            self._changes.sync()
            self._changes.close()
