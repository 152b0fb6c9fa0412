"""Producer groups as the broker sees them: which connections belong to each group, fed by
HEART_BEAT (its producerDataSet) and emptied by UNREGISTER_CLIENT and closed connections.

The broker needs them for one thing: a transaction check-back goes to a live member of the
half message's producer group (RocketMQ's ProducerManager.getAvailableChannel).

Invariant: `conn` is in `_groups[g]` iff `g` is in `_of[conn]`.
"""

from __future__ import annotations

import random

from longboat.remoting import Connection


class ProducerTable:
    def __init__(self) -> None:
        self._groups: dict[str, dict[Connection, str]] = {}  # group → connection → client id
        self._of: dict[Connection, set[str]] = {}

    def heartbeat(self, conn: Connection, client_id: str, groups: list[str]) -> None:
        for group in groups:
            self._groups.setdefault(group, {})[conn] = client_id
            self._of.setdefault(conn, set()).add(group)

    def unregister(self, conn: Connection, group: str) -> None:
        members = self._groups.get(group)
        if members is not None:
            members.pop(conn, None)
            if not members:
                del self._groups[group]
        groups = self._of.get(conn)
        if groups is not None:
            groups.discard(group)
            if not groups:
                del self._of[conn]

    def remove_connection(self, conn: Connection) -> None:
        for group in list(self._of.get(conn, ())):
            self.unregister(conn, group)

    def any_live(self, group: str) -> Connection | None:
        """A random open connection of the group's members, None when none is left."""
        live = [c for c in self._groups.get(group, {}) if not c.closed]
        return random.choice(live) if live else None
