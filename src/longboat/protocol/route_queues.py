"""Which queues a topic's route offers, by the rules of Java's
`MQClientInstance.topicRouteData2TopicPublishInfo` / `topicRouteData2TopicSubscribeInfo`:

* publish queues: for each queue data with the WRITE permission whose broker has a master
  (id 0), `writeQueueNums` queues — a slave cannot take writes;
* subscribe queues: for each queue data with the READ permission, `readQueueNums` queues;
* both sorted by (broker name, queue id), so every client computes the same lists and
  rebalance allocations agree.

Both sides apply them: a client to the routes it sends and consumes by (`client/_internal/
route.py`), a broker to the routes it shares when it assigns a group's queues
(`broker/services/topic_routes.py`, as RocketMQ 5.3's broker calls the client's rule).

A route learned through the auto-create topic (TBW102) gets, per broker, the queues the broker
will create the topic with on the first send (`topic_names.auto_created_queue_nums`).
"""

from __future__ import annotations

from dataclasses import dataclass

from longboat.protocol.bodies import TopicRouteData
from longboat.protocol.topic_names import auto_created_queue_nums
from longboat.protocol.types import PERM_READ, PERM_WRITE, MessageQueue


@dataclass(frozen=True, slots=True)
class RouteQueues:
    publish: list[MessageQueue]
    subscribe: list[MessageQueue]


def route_queues(
    topic: str, data: TopicRouteData, *, default_queue_nums: int | None = None
) -> RouteQueues:
    """The queues of `topic` that `data` routes; `default_queue_nums` is set when `data` is
    the auto-create topic's route (the queues are then the ones a first send creates)."""
    masters = {b.broker_name for b in data.broker_datas if b.master_addr}
    publish: list[MessageQueue] = []
    subscribe: list[MessageQueue] = []
    for qd in sorted(data.queue_datas, key=lambda q: q.broker_name):
        writes, reads = qd.write_queue_nums, qd.read_queue_nums
        if default_queue_nums is not None:
            writes = reads = auto_created_queue_nums(default_queue_nums, qd.write_queue_nums)
        if qd.perm & PERM_WRITE and qd.broker_name in masters:
            publish += (MessageQueue(topic, qd.broker_name, i) for i in range(writes))
        if qd.perm & PERM_READ:
            subscribe += (MessageQueue(topic, qd.broker_name, i) for i in range(reads))
    return RouteQueues(publish, subscribe)
