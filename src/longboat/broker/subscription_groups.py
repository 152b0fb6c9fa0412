"""Consumer groups' broker-side settings (retry queue count, retry limit, ...).

Persisted as RocketMQ's `config/subscriptionGroup.json` shape
(`{"dataVersion": {...}, "subscriptionGroupTable": {name: SubscriptionGroupConfig}}`).  Only
groups configured explicitly (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) are stored; any other group
gets RocketMQ's defaults, which is what its auto-creation would have written, without a file
write on a consumer's first send-back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from longboat.protocol.bodies import DataVersion, SubscriptionGroupConfig
from longboat.store.json_file import read_json, write_json_atomic


class SubscriptionGroupTable:
    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._table: dict[str, SubscriptionGroupConfig] = {}
        self._version = DataVersion()
        self._lock = threading.Lock()

    def load(self) -> None:
        """Read the file if there is one; ValueError when it exists but is damaged."""
        data = read_json(self.path) or {}
        table = {
            name: SubscriptionGroupConfig.from_dict(cfg)
            for name, cfg in (data.get("subscriptionGroupTable") or {}).items()
        }
        with self._lock:
            self._table = table
            self._version = DataVersion.from_dict(data.get("dataVersion"))

    def get(self, group: str) -> SubscriptionGroupConfig:
        """The group's settings: the stored ones, else RocketMQ's defaults."""
        return self._table.get(group) or SubscriptionGroupConfig(group_name=group)

    def configured(self) -> dict[str, SubscriptionGroupConfig]:
        with self._lock:
            return dict(self._table)

    def put(self, config: SubscriptionGroupConfig) -> None:
        """Create or replace a group's settings, durably (raises OSError on I/O failure)."""
        with self._lock:
            self._table[config.group_name] = config
            self._version = DataVersion(
                timestamp=int(self._clock() * 1000), counter=self._version.counter + 1
            )
            write_json_atomic(
                self.path,
                {
                    "dataVersion": self._version.to_dict(),
                    "subscriptionGroupTable": {n: c.to_dict() for n, c in self._table.items()},
                },
            )
