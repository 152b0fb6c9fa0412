"""Which queues a member of a group gets when the broker assigns (QUERY_ASSIGNMENT), as
RocketMQ 5.3's QueryAssignmentProcessor decides.

The mode an operator set for (topic, group) decides the shape:
* PULL (the default): the group's live members share the topic's queues by the strategy the
  client names (`AVG`, `AVG_BY_CIRCLE`), as client-side rebalancing would share them.
* POP with `popShareQueueNum` <= 0 or at least the number of the other members: every member
  gets the whole topic, one queue id -1 per broker (pop from any queue).
* POP with a smaller `popShareQueueNum` N: a member's own share plus the shares of the N
  members after it in the sorted id list; with more members than queues, member i gets
  queue i mod (number of queues).

None means "no valid answer" (no member known, an unknown strategy): the client keeps what it
has.  Pure: the caller gives the queues and the members.
"""

from __future__ import annotations

from collections.abc import Sequence

from longboat.protocol.allocate import (
    AllocateStrategy,
    allocate_averagely,
    allocate_averagely_by_circle,
)
from longboat.protocol.assignment_bodies import MessageRequestMode, MessageRequestModeBody
from longboat.protocol.types import MessageQueue

# The strategies RocketMQ's broker knows, by the names its clients send.
STRATEGIES: dict[str, AllocateStrategy] = {
    "AVG": allocate_averagely,
    "AVG_BY_CIRCLE": allocate_averagely_by_circle,
}


def assign(
    setting: MessageRequestModeBody,
    client_id: str,
    queues: Sequence[MessageQueue],
    client_ids: Sequence[str],
    strategy_name: str,
) -> set[MessageQueue] | None:
    """`client_id`'s queues of the topic (clustering); `queues` and `client_ids` unsorted."""
    strategy = STRATEGIES.get(strategy_name)
    if strategy is None or not client_ids or not queues:
        return None
    mq_all, cid_all = sorted(queues), sorted(client_ids)
    group = setting.consumer_group
    if setting.mode is MessageRequestMode.POP:
        return _assign_for_pop(strategy, group, client_id, mq_all, cid_all, setting)
    return set(strategy(group, client_id, mq_all, cid_all))


def _assign_for_pop(
    strategy: AllocateStrategy,
    group: str,
    client_id: str,
    mq_all: list[MessageQueue],
    cid_all: list[str],
    setting: MessageRequestModeBody,
) -> set[MessageQueue]:
    share = setting.pop_share_queue_num
    if share <= 0 or share >= len(cid_all) - 1:
        return {MessageQueue(mq.topic, mq.broker_name, -1) for mq in mq_all}
    if client_id not in cid_all:
        return set()
    index = cid_all.index(client_id)
    if len(cid_all) > len(mq_all):
        return {mq_all[index % len(mq_all)]}
    mine = set(strategy(group, client_id, mq_all, cid_all))
    for step in range(1, share + 1):
        mine.update(strategy(group, cid_all[(index + step) % len(cid_all)], mq_all, cid_all))
    return mine
