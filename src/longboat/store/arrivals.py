"""Who hears of appends: arrival listeners (a queue has new entries) and append observers (the
commit log has a new end).

Both are called on the appending thread, right after the append made what they hear of
visible: a reader sees the queue entries before a listener is told of them, so a woken pull
finds them.  There is no dispatch thread to fall behind, poll, or lose a wake-up.  The lists
are replaced, never changed in place, so an append walks a list no registration disturbs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

log = logging.getLogger(__name__)

ArrivalListener = Callable[[str, int, int, int, Mapping[str, str]], None]


class Arrivals:
    """The listeners and observers of one store."""

    def __init__(self) -> None:
        self.listeners: list[ArrivalListener] = []
        self.observers: list[Callable[[int], None]] = []

    def add_listener(self, listener: ArrivalListener) -> None:
        """`listener(topic, queue_id, new_max_offset, tags_code, properties)`: see
        `MessageStore.add_arrival_listener`."""
        self.listeners = [*self.listeners, listener]

    def add_observer(self, observer: Callable[[int], None]) -> None:
        """`observer(end)`: see `MessageStore.observe_appends`."""
        self.observers = [*self.observers, observer]

    def tell(
        self, topic: str, queue_id: int, new_max: int, code: int, properties: Mapping[str, str]
    ) -> None:
        """Tell every listener of entries with tags `code`; a listener's exception is logged
        and dropped (the append stands whatever a listener does)."""
        for listener in self.listeners:
            try:
                listener(topic, queue_id, new_max, code, properties)
            except Exception:
                log.exception("arrival listener %r failed", listener)

    def tell_batch(
        self,
        topic: str,
        queue_id: int,
        new_max: int,
        tags_codes: Sequence[int],
        consumable: Sequence[bool] | None,
        properties_of: Callable[[int], Mapping[str, str]],
    ) -> None:
        """Tell of one appended batch: once per distinct tags code among its consumable
        messages (`consumable` None: all are), with the properties of the first message
        with that code (`properties_of(i)`, parsed only for these few)."""
        seen: set[int] = set()
        for i, code in enumerate(tags_codes):
            if code in seen or (consumable is not None and not consumable[i]):
                continue
            seen.add(code)
            self.tell(topic, queue_id, new_max, code, properties_of(i))

    def appended(self, end: int) -> None:
        """Tell every observer the commit log's new end."""
        for observer in self.observers:
            observer(end)
