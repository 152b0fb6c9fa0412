"""Queue allocation strategies: every member computes its own share from the same inputs.

Each strategy is a pure function `(group, client_id, queues, client_ids) -> my queues`.  All
members see the same sorted queue list and the same sorted id list, so their shares are
disjoint and cover every queue without talking to each other.  Results match Java's
`AllocateMessageQueueAveragely`, `...AveragelyByCircle` and `...ConsistentHash`, so Python
and Java members can share a group.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence

from longboat.protocol.types import MessageQueue

AllocateStrategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def _index(client_id: str, client_ids: Sequence[str]) -> int | None:
    try:
        return list(client_ids).index(client_id)
    except ValueError:
        return None


def allocate_averagely(
    group: str, client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]
) -> list[MessageQueue]:
    """Contiguous blocks: the first `len(queues) % n` members get one queue more."""
    index = _index(client_id, client_ids)
    if index is None or not queues:
        return []
    n, size = len(client_ids), len(queues)
    mod = size % n
    if size <= n:
        average = 1
    elif mod > 0 and index < mod:
        average = size // n + 1
    else:
        average = size // n
    start = index * average if mod > 0 and index < mod else index * average + mod
    count = min(average, size - start)
    return [queues[(start + i) % size] for i in range(max(0, count))]


def allocate_averagely_by_circle(
    group: str, client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]
) -> list[MessageQueue]:
    """Dealt like cards: queue i goes to member i mod n."""
    index = _index(client_id, client_ids)
    if index is None:
        return []
    return [mq for i, mq in enumerate(queues) if i % len(client_ids) == index]


def _md5_hash(key: str) -> int:
    digest = hashlib.md5(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big")


def _java_mq_string(mq: MessageQueue) -> str:
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def consistent_hash(virtual_nodes: int = 10) -> AllocateStrategy:
    """A hash ring with `virtual_nodes` points per member: a member joining or leaving moves
    only the queues next to its points."""

    def allocate(
        group: str, client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]
    ) -> list[MessageQueue]:
        if _index(client_id, client_ids) is None:
            return []
        ring = sorted(
            (_md5_hash(f"{cid}-{i}"), cid) for cid in client_ids for i in range(virtual_nodes)
        )
        points = [p for p, _ in ring]
        mine = []
        for mq in queues:
            at = bisect.bisect_left(points, _md5_hash(_java_mq_string(mq)))
            if ring[at % len(ring)][1] == client_id:
                mine.append(mq)
        return mine

    return allocate


allocate_consistent_hash = consistent_hash()
