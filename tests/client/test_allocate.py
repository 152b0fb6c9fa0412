"""Allocation strategies: members' shares are disjoint, cover every queue, match Java's."""

from __future__ import annotations

import pytest

from longboat.client.rebalance.allocate import (
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_consistent_hash,
)
from longboat.protocol.bodies import MessageQueue

QUEUES = [MessageQueue("T", b, i) for b in ("a", "b") for i in range(4)]


@pytest.mark.parametrize(
    "strategy", [allocate_averagely, allocate_averagely_by_circle, allocate_consistent_hash]
)
@pytest.mark.parametrize("members", [1, 3, 8, 11])
def test_shares_partition_the_queues(strategy, members: int) -> None:
    ids = sorted(f"10.0.0.{i}@{i}" for i in range(members))
    shares = [strategy("g", cid, QUEUES, ids) for cid in ids]
    flat = [mq for share in shares for mq in share]
    assert sorted(flat) == QUEUES
    assert strategy("g", "not-a-member", QUEUES, ids) == []


def test_averagely_matches_java_blocks() -> None:
    ids = ["c0", "c1", "c2"]
    # 8 queues over 3 members: 3, 3, 2 contiguous (Java AllocateMessageQueueAveragely).
    assert allocate_averagely("g", "c0", QUEUES, ids) == QUEUES[0:3]
    assert allocate_averagely("g", "c1", QUEUES, ids) == QUEUES[3:6]
    assert allocate_averagely("g", "c2", QUEUES, ids) == QUEUES[6:8]
    assert allocate_averagely_by_circle("g", "c1", QUEUES, ids) == QUEUES[1::3]


def test_consistent_hash_moves_few_queues_when_a_member_joins() -> None:
    queues = [MessageQueue("T", "a", i) for i in range(64)]
    before = {cid: set(allocate_consistent_hash("g", cid, queues, ["x", "y"])) for cid in "xy"}
    after = {cid: set(allocate_consistent_hash("g", cid, queues, ["x", "y", "z"])) for cid in "xyz"}
    # Queues only move to the newcomer, never between the old members.
    assert after["x"] <= before["x"] and after["y"] <= before["y"]
