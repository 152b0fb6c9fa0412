"""What the Groups page calls a group, as a table: members, lag, and how long the oldest
unconsumed message has waited."""

from __future__ import annotations

import pytest

from longboat.client.admin import QueueProgress, known_lag
from longboat.dashboard.views import LAGGING_AFTER_S, group_state
from longboat.protocol.types import MessageQueue


@pytest.mark.parametrize(
    ("members", "lag", "waited", "state"),
    [
        (0, None, None, "no offsets"),
        (2, None, None, "no offsets"),
        (0, 0, None, "idle"),
        (0, 5, 30.0, "offline"),
        (1, 0, None, "running"),
        # Between two commits of a member that keeps up: the lag is its last few seconds.
        (1, 3, 1.5, "running"),
        (1, 3, LAGGING_AFTER_S + 1, "lagging"),
    ],
)
def test_group_state(members: int, lag: int | None, waited: float | None, state: str) -> None:
    assert group_state(members, lag, waited) == state


def progress(topic: str, consumer_offset: int | None) -> QueueProgress:
    return QueueProgress(MessageQueue(topic, "b", 0), 10, consumer_offset, 0, None)


def test_a_group_without_stored_offsets_has_no_known_lag() -> None:
    assert known_lag([]) is None
    assert known_lag([progress("T", None), progress("%RETRY%g", 4)]) is None
    assert known_lag([progress("T", None), progress("U", 4)]) == 6
