"""A slave's replication lag in seconds (`longboat.client.replication.seconds_behind`): how long
ago its master held no more than the slave holds now, from the master's sampled commit-log
ends, as a table of histories."""

from __future__ import annotations

import pytest

from longboat.client.replication import SecondsBehind, seconds_behind

NOW = 1_000.0
# The master's (time, commit-log end), oldest first: it wrote until 970, then stood still.
WRITING = [(940.0, 100), (950.0, 200), (960.0, 300), (970.0, 400), (980.0, 400)]

CASES = [
    # (history, master's end now, slave's end now, expected)
    (WRITING, 400, 400, SecondsBehind(0.0)),  # caught up: 0 whatever the history
    ([], 400, 400, SecondsBehind(0.0)),  # caught up before any sample
    (WRITING, 400, 450, SecondsBehind(0.0)),  # ahead (the master's log was cut): caught up
    (WRITING, 500, 400, SecondsBehind(20.0)),  # the master wrote since the last sample
    (WRITING, 400, 300, SecondsBehind(40.0)),  # holds what the master held at 960
    (WRITING, 400, 250, SecondsBehind(50.0)),  # mid-message: more than at 950, less than 960
    (WRITING, 400, 100, SecondsBehind(60.0)),  # exactly the oldest sample
    (WRITING, 400, 99, SecondsBehind(60.0, at_least=True)),  # behind the whole window
    (WRITING, 400, 0, SecondsBehind(60.0, at_least=True)),  # copied nothing
    ([(990.0, 400)], 400, 0, SecondsBehind(10.0, at_least=True)),  # one sample so far
    ([], 400, 300, None),  # behind, and nothing sampled yet: unknown
    # The master's end went back (a new log under the same address): the latest sample the
    # slave covers counts, not an older one.
    ([(950.0, 100), (960.0, 500), (970.0, 50)], 80, 60, SecondsBehind(30.0)),
    ([(1_005.0, 100)], 200, 100, SecondsBehind(0.0)),  # a sample "after now": never negative
]


@pytest.mark.parametrize(("history", "master_end", "own_end", "expected"), CASES)
def test_seconds_behind(
    history: list[tuple[float, int]], master_end: int, own_end: int, expected: SecondsBehind | None
) -> None:
    assert seconds_behind(history, master_end, own_end, NOW) == expected


def test_a_stuck_slave_falls_further_behind_as_time_passes() -> None:
    lags = [seconds_behind(WRITING, 400, 250, now) for now in (990.0, 1_000.0, 1_100.0)]
    assert [lag.seconds for lag in lags if lag] == [40.0, 50.0, 150.0]
