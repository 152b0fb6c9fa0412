"""Which broker of a group a queue is pulled from (`client/_internal/pull_target.py`), driven by
hand with a fake clock: suggestions, groups whose master left the routes, unreachable addresses."""

from __future__ import annotations

from broker.fakes import FakeClock
from longboat.client._internal.pull_target import AVOID_S, PullTargets
from longboat.protocol.types import MessageQueue

MQ = MessageQueue("T", "group-a", 0)
OTHER = MessageQueue("T", "group-a", 1)
M, S1, S2 = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"
GROUP = {0: M, 1: S1}


def test_the_master_until_an_answer_suggests_otherwise_per_queue() -> None:
    t = PullTargets(clock=FakeClock())
    steps = [
        # (suggestion for MQ before choosing, broker addresses, MQ's choice, OTHER's choice)
        (None, GROUP, (0, M), (0, M)),
        (1, GROUP, (1, S1), (0, M)),  # only the suggested queue moves
        (1, {0: M, 2: S2}, (2, S2), (0, M)),  # slave 1 gone: Java's id + 1
        (3, {0: M, 1: S1}, (0, M), (0, M)),  # no such slave: the master
        (1, {0: M}, (0, M), (0, M)),
        (1, {1: S1}, (1, S1), (1, S1)),  # the master left the routes: its slave
        (0, GROUP, (0, M), (0, M)),
        (0, {}, None, None),
    ]
    for suggestion, addrs, mine, other in steps:
        if suggestion is not None:
            t.suggest(MQ, suggestion)
        assert t.choose(MQ, addrs) == mine
        assert t.choose(OTHER, addrs) == other


def test_an_unreachable_master_is_left_alone_for_a_while_then_tried_again() -> None:
    clock = FakeClock()
    t = PullTargets(clock=clock)
    t.unreachable(M)
    assert t.choose(MQ, GROUP) == (1, S1)
    assert t.master_reachable(GROUP) is None
    clock.now += AVOID_S - 0.1
    assert t.choose(MQ, GROUP) == (1, S1)
    clock.now += 0.1
    assert t.choose(MQ, GROUP) == (0, M)  # time to try the master again
    assert t.master_reachable(GROUP) == M
    t.unreachable(M)
    t.reachable(M)  # it answered after all
    assert t.choose(MQ, GROUP) == (0, M)


def test_when_every_address_is_unreachable_the_suggested_one_is_still_chosen() -> None:
    t = PullTargets(clock=FakeClock())
    t.suggest(MQ, 1)
    t.unreachable(M)
    t.unreachable(S1)
    assert t.choose(MQ, GROUP) == (1, S1)
    assert t.choose(OTHER, GROUP) == (0, M)
