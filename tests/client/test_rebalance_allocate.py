"""Allocation properties for any group shape: a partition, balanced, the same on every member."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.client.rebalance.allocate import (
    allocate_averagely,
    allocate_averagely_by_circle,
    consistent_hash,
)
from longboat.protocol.bodies import MessageQueue

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
