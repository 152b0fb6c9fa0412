"""The process queue: committed offset, flow-control limits, orderly take/commit/give back."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.client.consume.process_queue import FlowControl, FlowLimits, ProcessQueue
from longboat.protocol.message import MessageExt


def msgs(start: int, n: int, size: int = 10) -> list[MessageExt]:
    return [MessageExt("T", b"x" * size, queue_offset=o) for o in range(start, start + n)]


def test_committed_offset_is_the_lowest_unconsumed() -> None:
    pq = ProcessQueue()
    assert pq.committed_offset is None
    pq.start_at(100)
    assert pq.committed_offset == 100
    batch = msgs(100, 5)
    assert pq.put(batch) == batch
    # Consumed out of order: the offset waits for 100.
    assert pq.remove(batch[1:4]) == 100
    assert pq.remove(batch[:1]) == 104
    assert pq.remove(batch[4:]) == 105
    assert pq.count == 0 and pq.size_bytes == 0


def test_duplicates_and_puts_after_drop_are_ignored() -> None:
    pq = ProcessQueue()
    pq.put(msgs(0, 3))
    assert pq.put(msgs(1, 3)) == msgs(3, 1)
    pq.dropped = True
    assert pq.put(msgs(10, 2)) == []
    assert pq.count == 4


def test_span_is_measured_from_the_committed_offset_not_the_cache() -> None:
    # RocketMQ #1404: one hung message at 0 and fast successors leave a one-entry cache.
    pq = ProcessQueue(FlowLimits(max_count=1000, max_span=100))
    pq.start_at(0)
    for start in range(0, 96, 32):
        batch = pq.put(msgs(start, 32))
        pq.remove(batch[1:] if start == 0 else batch)
    assert pq.count == 1
    assert pq.span == 96
    assert pq.pull_size(32) == 4
    pq.put(msgs(96, 4))
    pq.remove(msgs(96, 4))
    assert pq.flow_control() is FlowControl.SPAN
    pq.remove(msgs(0, 1))
    assert pq.flow_control() is None and pq.span == 0


def test_pull_size_never_lets_the_count_pass_the_threshold() -> None:
    pq = ProcessQueue(FlowLimits(max_count=50, max_span=None))
    pq.start_at(0)
    offset = 0
    while (n := pq.pull_size(32)) > 0:
        pq.put(msgs(offset, n))
        offset += n
    assert pq.count == 50 == pq.peak_count
    assert pq.flow_control() is FlowControl.COUNT


def test_size_threshold() -> None:
    pq = ProcessQueue(FlowLimits(max_bytes=1000))
    pq.put(msgs(0, 10, size=100))
    assert pq.flow_control() is FlowControl.SIZE
    pq.remove(msgs(0, 1))
    assert pq.flow_control() is None


def test_skip_and_move() -> None:
    pq = ProcessQueue()
    pq.start_at(5)
    pq.skip_to(9)  # entries 5..8 filtered out by the broker
    assert pq.committed_offset == 9
    assert pq.move_to(3) is True  # offset illegal, nothing pending: go back
    assert pq.committed_offset == 3
    pq.put(msgs(3, 2))
    assert pq.move_to(100) is False  # pending messages keep the committed offset
    assert pq.committed_offset == 3


def test_orderly_take_commit_and_give_back() -> None:
    pq = ProcessQueue(FlowLimits(max_span=None))
    pq.put(msgs(0, 5))
    first = pq.take(2)
    assert [m.queue_offset for m in first] == [0, 1]
    assert pq.take(2) == []  # one batch out at a time
    assert pq.committed_offset == 0
    assert pq.commit() == 2
    batch = pq.take(3)
    # The middle message went to the DLQ; the others come back first.
    assert pq.give_back([batch[0], batch[2]]) == 2
    assert [m.queue_offset for m in pq.take(10)] == [2, 4]
    assert pq.count == 2 and pq.size_bytes == 20


OPS = ["pull", "skip", "consume", "take", "commit", "back"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("pull skip consume take commit back"), st.integers(1, 90)))
)
def test_committed_offset_matches_a_reference_model(ops: list[tuple[str, int]]) -> None:
    """Against a model that recomputes everything: committed = lowest pending, else the end."""
    pq = ProcessQueue(FlowLimits(max_count=10**9, max_span=None))
    pq.start_at(0)
    pending: set[int] = set()
    end = 0
    rng = random.Random(len(ops))
    for op, n in ops:
        if op == "pull":
            got = pq.put(msgs(end, n))
            assert len(got) == n
            pending |= set(range(end, end + n))
            end += n
        elif op == "skip":
            end += n
            pq.skip_to(end)
        elif op == "consume" and pending:
            if not pq.has_taken:  # concurrent and orderly use are not mixed on one queue
                chosen = rng.sample(sorted(pending), min(n, len(pending)))
                pq.remove([MessageExt("T", b"", queue_offset=o) for o in chosen])
                pending -= set(chosen)
        elif op == "take" and not pq.has_taken:
            taken = pq.take(n)
            assert [m.queue_offset for m in taken] == sorted(pending)[: len(taken)]
        elif op == "commit" and pq.has_taken:
            taken_offsets = sorted(pending)[: len(pq._taken)]
            pq.commit()
            pending -= set(taken_offsets)
        elif op == "back" and pq.has_taken:
            pq.give_back()
        assert pq.committed_offset == (min(pending) if pending else end)
        assert pq.count == len(pending)
