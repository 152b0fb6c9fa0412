"""RocketMQ's delay levels as durations: the `messageDelayLevel` ladder's text and its parser.

Shared by the broker (which schedules delayed messages by level) and the client (which checks
a level, or maps a duration to one, before sending).  Units s, m, h and d, plus `ms` (ours,
for tests that need a short ladder).
"""

from __future__ import annotations

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

# Longest suffix first: "ms" must win over "s".
_UNITS_MS: tuple[tuple[str, int], ...] = (
    ("ms", 1),
    ("s", 1000),
    ("m", 60_000),
    ("h", 3_600_000),
    ("d", 86_400_000),
)


def parse_duration(item: str) -> int:
    """One ladder item in milliseconds; ValueError names the item that is wrong."""
    for suffix, unit_ms in _UNITS_MS:
        if item.endswith(suffix):
            number = item[: -len(suffix)]
            try:
                value = int(number)
            except ValueError:
                break
            if value < 0:
                break
            return value * unit_ms
    raise ValueError(
        f"messageDelayLevel: {item!r} is not a duration (a whole number and a unit: ms, s, m, h, d)"
    )


def parse_ladder(text: str) -> tuple[int, ...]:
    """A `messageDelayLevel` string as the delay of each level (level n at index n - 1), ms."""
    return tuple(parse_duration(item) for item in text.split())


DEFAULT_DELAYS_MS = parse_ladder(DEFAULT_MESSAGE_DELAY_LEVEL)
