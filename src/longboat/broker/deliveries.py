"""Who hears what pull answers deliver (statistics, metrics).

The pull module tells `Deliveries` as each answer with records is built, immediate or held,
with the count the read already has, so no listener walks the body again to learn it.
"""

from __future__ import annotations

from collections.abc import Callable

# `listener(topic, messages, bytes)`: what one pull answer delivers.
DeliveryListener = Callable[[str, int, int], None]


class Deliveries:
    def __init__(self) -> None:
        self._listeners: list[DeliveryListener] = []

    def add(self, listener: DeliveryListener) -> None:
        self._listeners.append(listener)

    def delivered(self, topic: str, messages: int, size: int) -> None:
        for listener in self._listeners:
            listener(topic, messages, size)
