"""A broker's table of configs by name with the DataVersion of its last change: the topic
table (topics) and the subscription groups' table each keep one and persist it their own way.

Invariant: the table and its version change together, under `_lock`; every change takes the
next version (`_next_version`), which the name server and a slave compare to see a change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from longboat.protocol.bodies import DataVersion

V = TypeVar("V")


class VersionedTable(Generic[V]):
    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._table: dict[str, V] = {}
        self._version = DataVersion()
        self._lock = threading.Lock()

    def all(self) -> dict[str, V]:
        """A copy of the table, as it is now."""
        with self._lock:
            return dict(self._table)

    def _next_version(self) -> None:
        """Take the version of a change made now (the caller holds `_lock`)."""
        self._version = self._version.next(self._clock())
