"""The store's lifecycle, state as data, shared by the facade that moves it and the paths it
gates (appends, replicated appends, the maintenance thread):

    NEW --open()--> OPEN --close()--> CLOSED
    OPEN: puts accepted; flush and maintenance threads running; abort marker present.
    close() is idempotent; puts outside OPEN answer SERVICE_NOT_AVAILABLE.

Only `MessageStore.open` and `close` change the state.  An append reads it under the store's
lock and `close` changes it under the same lock, so no append is half done when the store
closes.
"""

from __future__ import annotations

from enum import Enum


class StoreState(Enum):
    NEW = "NEW"
    OPEN = "OPEN"
    CLOSED = "CLOSED"


class Lifecycle:
    """Where one store is in its lifecycle."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = StoreState.NEW

    @property
    def is_open(self) -> bool:
        return self.state is StoreState.OPEN
