"""Turning "from these offsets to those" into Spark input partitions, and rate limits fairly.

Pure functions over positions (`dict[MessageQueue, int]`), so they are easy to test and give
the same answer every time they are asked: a replayed micro-batch must cover exactly the
ranges the first attempt covered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from longboat.protocol.types import MessageQueue


@dataclass(frozen=True, slots=True)
class QueueRange(InputPartition):
    """Offsets [start, end) of one queue: one Spark task.  Everything `read()` needs travels
    here, because the worker that reads sees none of the planner's state."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int
    # The queue appeared after the query's start offsets were fixed: read it from its first
    # kept message, and do not call a missing prefix data loss.
    new_queue: bool = False

    @property
    def mq(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker, self.queue_id)


def spread_limit(
    start: Mapping[MessageQueue, int], available: Mapping[MessageQueue, int], max_rows: int
) -> dict[MessageQueue, int]:
    """End offsets that admit at most `max_rows` messages in total, shared fairly.

    Water filling: every queue with a backlog gets an equal share; what a short queue leaves
    unused goes to the others.  Remainders go to queues in sorted order, so the result is a
    function of its inputs only.  A queue missing from `start` is new and starts at 0."""
    backlog = {mq: max(0, end - start.get(mq, 0)) for mq, end in sorted(available.items())}
    grant = dict.fromkeys(backlog, 0)
    budget = max_rows
    hungry = [mq for mq, n in backlog.items() if n > 0]
    while budget > 0 and hungry:
        share, extra = divmod(budget, len(hungry))
        still: list[MessageQueue] = []
        for i, mq in enumerate(hungry):
            want = backlog[mq] - grant[mq]
            give = min(want, share + (1 if i < extra else 0))
            grant[mq] += give
            budget -= give
            if grant[mq] < backlog[mq]:
                still.append(mq)
        hungry = still
    return {mq: start.get(mq, 0) + grant[mq] for mq in backlog}


def plan_ranges(
    start: Mapping[MessageQueue, int],
    end: Mapping[MessageQueue, int],
    max_per_partition: int,
    min_partitions: int | None = None,
) -> list[QueueRange]:
    """One partition per queue with something to read, ranges over `max_per_partition` split
    into equal pieces (so queues with a long backlog still read in parallel).  With
    `min_partitions`, as Kafka's source: when there are fewer ranges than that, each queue's
    range is split into pieces in proportion to its share of all the offsets (at least one),
    so the big queues are the ones split."""
    sizes = {mq: end[mq] - start.get(mq, 0) for mq in sorted(end) if end[mq] > start.get(mq, 0)}
    total = sum(sizes.values())
    proportional = min_partitions is not None and len(sizes) < min_partitions
    out: list[QueueRange] = []
    for mq, size in sizes.items():
        new_queue = mq not in start
        lo = start.get(mq, 0)
        hi = end[mq]
        pieces = -(-size // max_per_partition)
        if proportional:
            assert min_partitions is not None
            pieces = max(pieces, min(size, max(1, round(size / total * min_partitions))))
        step = -(-(hi - lo) // pieces)
        for a in range(lo, hi, step):
            out.append(
                QueueRange(mq.topic, mq.broker_name, mq.queue_id, a, min(hi, a + step), new_queue)
            )
    return out
