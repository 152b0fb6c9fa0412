"""Consumer groups' broker-side settings (retry queue count, retry limit, ...).

Persisted as RocketMQ's `config/subscriptionGroup.json` shape
(`{"dataVersion": {...}, "subscriptionGroupTable": {name: SubscriptionGroupConfig}}`).  Only
groups configured explicitly (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) are stored; any other group
gets RocketMQ's defaults, which is what its auto-creation would have written, without a file
write on a consumer's first send-back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from longboat.protocol.bodies import SubscriptionGroupConfig, SubscriptionGroupWrapper
from longboat.store.json_file import read_json, write_json_atomic
from longboat.store.versioned_table import VersionedTable


class SubscriptionGroupTable(VersionedTable[SubscriptionGroupConfig]):
    """`all()` holds the groups configured explicitly; `get` answers for any group."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock=clock)
        self.path = path

    def load(self) -> None:
        """Read the file if there is one; ValueError when it exists but is damaged."""
        wrapper = SubscriptionGroupWrapper.from_dict(read_json(self.path))
        with self._lock:
            self._table = wrapper.subscription_group_table
            self._version = wrapper.data_version

    def get(self, group: str) -> SubscriptionGroupConfig:
        """The group's settings: the stored ones, else RocketMQ's defaults."""
        return self._table.get(group) or SubscriptionGroupConfig(group_name=group)

    def put(self, config: SubscriptionGroupConfig) -> None:
        """Create or replace a group's settings, durably (raises OSError on I/O failure)."""
        with self._lock:
            self._table[config.group_name] = config
            self._next_version()
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
