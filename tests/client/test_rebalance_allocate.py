"""Allocation properties for any group shape: a partition, balanced, the same on every member."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.allocate import (
    allocate_averagely,
    allocate_averagely_by_circle,
    allocate_consistent_hash,
    consistent_hash,
)
from longboat.protocol.types import MessageQueue

queue_lists = st.lists(
    st.builds(MessageQueue, st.just("T"), st.sampled_from(["a", "b", "c"]), st.integers(0, 63)),
    unique=True,
    max_size=64,
).map(sorted)
member_lists = st.lists(
    st.from_regex(r"10\.0\.0\.[0-9]{1,3}@[0-9]{1,6}", fullmatch=True),
    unique=True,
    min_size=1,
    max_size=12,
).map(sorted)


@settings(max_examples=150, deadline=None)
@given(queues=queue_lists, members=member_lists)
def test_averaging_strategies_partition_and_balance(
    queues: list[MessageQueue], members: list[str]
) -> None:
    for strategy in (allocate_averagely, allocate_averagely_by_circle):
        shares = [strategy("g", m, queues, members) for m in members]
        flat = [mq for share in shares for mq in share]
        assert sorted(flat) == queues  # every queue exactly once
        sizes = [len(s) for s in shares]
        assert max(sizes) - min(sizes) <= 1
        # Deterministic: recomputing (as another member would) gives the same share.
        assert shares == [strategy("g", m, list(queues), list(members)) for m in members]


@settings(max_examples=100, deadline=None)
@given(queues=queue_lists, members=member_lists, nodes=st.integers(1, 20))
def test_consistent_hash_partitions(
    queues: list[MessageQueue], members: list[str], nodes: int
) -> None:
    strategy = consistent_hash(nodes)
    shares = [strategy("g", m, queues, members) for m in members]
    assert sorted(mq for share in shares for mq in share) == queues
    assert shares == [strategy("g", m, queues, members) for m in members]


QUEUES = [MessageQueue("T", b, i) for b in ("a", "b") for i in range(4)]


def test_averagely_matches_java_blocks() -> None:
    ids = ["c0", "c1", "c2"]
    # 8 queues over 3 members: 3, 3, 2 contiguous (Java AllocateMessageQueueAveragely).
    assert allocate_averagely("g", "c0", QUEUES, ids) == QUEUES[0:3]
    assert allocate_averagely("g", "c1", QUEUES, ids) == QUEUES[3:6]
    assert allocate_averagely("g", "c2", QUEUES, ids) == QUEUES[6:8]
    assert allocate_averagely_by_circle("g", "c1", QUEUES, ids) == QUEUES[1::3]


def test_a_client_not_in_the_member_list_gets_nothing() -> None:
    for strategy in (allocate_averagely, allocate_averagely_by_circle, allocate_consistent_hash):
        assert strategy("g", "not-a-member", QUEUES, ["c0", "c1"]) == []


def test_consistent_hash_moves_few_queues_when_a_member_joins() -> None:
    queues = [MessageQueue("T", "a", i) for i in range(64)]
    before = {cid: set(allocate_consistent_hash("g", cid, queues, ["x", "y"])) for cid in "xy"}
    after = {cid: set(allocate_consistent_hash("g", cid, queues, ["x", "y", "z"])) for cid in "xyz"}
    # Queues only move to the newcomer, never between the old members.
    assert after["x"] <= before["x"] and after["y"] <= before["y"]
