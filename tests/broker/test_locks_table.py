"""The queue-lock table with a clock the test drives: exclusivity, refresh, expiry, unlock."""

from __future__ import annotations

from longboat.broker.state.queue_locks import QueueLockTable
from longboat.protocol.types import MessageQueue

from .fakes import FakeClock

MQ0 = MessageQueue("T", "broker-a", 0)
MQ1 = MessageQueue("T", "broker-a", 1)


def test_a_held_queue_is_refused_to_others_until_it_lapses() -> None:
    clock = FakeClock()
    table = QueueLockTable(max_live_s=60, clock=clock)
    assert table.lock("g", "c1", [MQ0, MQ1]) == [MQ0, MQ1]
    assert table.lock("g", "c2", [MQ0, MQ1]) == []
    clock.now += 60
    assert table.lock("g", "c2", [MQ0]) == []  # exactly 60 s: still live
    clock.now += 0.001
    assert table.lock("g", "c2", [MQ0]) == [MQ0]
    assert table.holder("g", "T", 0) == "c2"
    # c1 lost MQ0 but its lapsed MQ1 is still free for it to take back.
    assert table.lock("g", "c1", [MQ0, MQ1]) == [MQ1]


def test_refreshing_keeps_the_lock_alive() -> None:
    clock = FakeClock()
    table = QueueLockTable(max_live_s=60, clock=clock)
    table.lock("g", "c1", [MQ0])
    for _ in range(5):
        clock.now += 50
        assert table.lock("g", "c1", [MQ0]) == [MQ0]
        assert table.lock("g", "c2", [MQ0]) == []


def test_groups_lock_independently_and_only_the_holder_unlocks() -> None:
    table = QueueLockTable(clock=FakeClock())
    assert table.lock("g1", "c1", [MQ0]) == [MQ0]
    assert table.lock("g2", "c2", [MQ0]) == [MQ0]
    table.unlock("g1", "c2", [MQ0])
    assert table.holder("g1", "T", 0) == "c1"
    table.unlock("g1", "c1", [MQ0])
    assert table.holder("g1", "T", 0) is None
    assert table.lock("g1", "c3", [MQ0]) == [MQ0]


def test_expire_forgets_only_lapsed_locks() -> None:
    clock = FakeClock()
    table = QueueLockTable(max_live_s=60, clock=clock)
    table.lock("g", "c1", [MQ0])
    clock.now += 30
    table.lock("g", "c2", [MQ1])
    clock.now += 31
    assert table.expire() == 1
    assert table.holder("g", "T", 0) is None
    assert table.holder("g", "T", 1) == "c2"
