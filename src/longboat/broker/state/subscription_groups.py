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

from longboat.protocol.bodies import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper
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
        wrapper = SubscriptionGroupWrapper.from_dict(read_json(self.path))
        with self._lock:
            self._table = wrapper.subscription_group_table
            self._version = wrapper.data_version

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
            self._version = self._version.next(self._clock())
            write_json_atomic(self.path, self._wrapper().to_dict())

    def wrapper(self) -> SubscriptionGroupWrapper:
        """The table and its version (GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body)."""
        with self._lock:
            return self._wrapper()

    def _wrapper(self) -> SubscriptionGroupWrapper:
        return SubscriptionGroupWrapper(dict(self._table), self._version)

    def follow(self, master: SubscriptionGroupWrapper) -> bool:
        """A slave takes its master's table when its version differs (RocketMQ's
        SlaveSynchronize), durably; True when it changed."""
        with self._lock:
            if master.data_version == self._version:
                return False
            self._table = dict(master.subscription_group_table)
            self._version = master.data_version
            write_json_atomic(self.path, self._wrapper().to_dict())
            return True
