"""Topic configs, persisted as RocketMQ's `config/topics.json` shape
(`{"dataVersion": {...}, "topicConfigTable": {name: TopicConfig}}`).

Every change bumps the DataVersion (the name server compares it to tell a changed broker
from a heartbeat) and is written atomically before the call returns: topic changes are rare
and a created topic that vanished in a crash would surprise every client routed to it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from longboat.protocol.bodies import DataVersion, TopicConfig
from longboat.store.json_file import read_json, write_json_atomic


class TopicConfigTable:
    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._table: dict[str, TopicConfig] = {}
        self._version = DataVersion()
        self._lock = threading.Lock()

    def load(self) -> None:
        data = read_json(self.path) or {}
        table = {
            name: TopicConfig.from_dict(cfg)
            for name, cfg in (data.get("topicConfigTable") or {}).items()
        }
        with self._lock:
            self._table = table
            self._version = DataVersion.from_dict(data.get("dataVersion"))

    @property
    def data_version(self) -> DataVersion:
        v = self._version
        return DataVersion(timestamp=v.timestamp, counter=v.counter)

    def get(self, topic: str) -> TopicConfig | None:
        return self._table.get(topic)

    def all(self) -> dict[str, TopicConfig]:
        with self._lock:
            return dict(self._table)

    def put(self, config: TopicConfig) -> None:
        """Create or replace a topic's config, durably."""
        with self._lock:
            self._table[config.topic_name] = config
            self._bump_and_persist()

    def delete(self, topic: str) -> bool:
        """Remove a topic's config, durably; False when there was none."""
        with self._lock:
            if self._table.pop(topic, None) is None:
                return False
            self._bump_and_persist()
            return True

    def _bump_and_persist(self) -> None:
        self._version = DataVersion(
            timestamp=int(self._clock() * 1000), counter=self._version.counter + 1
        )
        write_json_atomic(
            self.path,
            {
                "dataVersion": self._version.to_dict(),
                "topicConfigTable": {n: c.to_dict() for n, c in self._table.items()},
            },
        )
