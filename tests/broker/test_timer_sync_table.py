"""A slave's copy of its master's timer progress (`services/timer_sync.py`), driven by hand:
the time it answers becomes the slave's only once the slave's log holds what the master's
did, a RocketMQ master's answer changes nothing, and a body of another shape is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from longboat.broker.services.timer_sync import checkpoint_body, done_before, take_checkpoint
from longboat.protocol import ProtocolError


def answer(done_before_ms: int, log_end: int) -> bytes:
    return checkpoint_body(done_before_ms, 7, 9, log_end, done_before_ms)


def test_the_master_s_time_counts_once_the_slave_s_log_holds_the_master_s_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "timerSynced.json"
    assert done_before(path, log_end=0) == 0
    take_checkpoint(path, answer(5000, log_end=100), log_end=100)
    assert done_before(path, log_end=100) == 5000
    # Ahead of this log: it waits, and the earlier time stands.
    take_checkpoint(path, answer(8000, log_end=300), log_end=200)
    assert done_before(path, log_end=200) == 5000
    assert done_before(path, log_end=300) == 8000  # what a promotion then reads
    take_checkpoint(path, answer(9000, log_end=500), log_end=300)  # the wait is over
    assert done_before(path, log_end=300) == 8000


def test_a_rocketmq_master_s_answer_changes_nothing_and_another_shape_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "timerSynced.json"
    take_checkpoint(path, answer(5000, log_end=0), log_end=0)
    take_checkpoint(path, answer(9000, log_end=0)[:56], log_end=0)  # RocketMQ's 56 bytes
    assert done_before(path, log_end=0) == 5000
    with pytest.raises(ProtocolError):
        take_checkpoint(path, b"\x00" * 12, log_end=0)
