"""A topic's route as the client uses it: which queues to write, which to read, where brokers are.

Built from the name server's `TopicRouteData` (either JSON dialect; `protocol.bodies` parses
both) by the rules of Java's `MQClientInstance.topicRouteData2TopicPublishInfo` /
`topicRouteData2TopicSubscribeInfo`:

* publish queues: for each queue data with the WRITE permission whose broker has a master
  (id 0), `writeQueueNums` queues — a slave cannot take writes;
* subscribe queues: for each queue data with the READ permission, `readQueueNums` queues;
* both sorted by (broker name, queue id), so every client computes the same lists and
  rebalance allocations agree.

A route learned through the auto-create topic (TBW102) is re-labelled with the real topic and
given, per broker, the queues the broker will create the topic with on the first send
(`topic_names.auto_created_queue_nums`, the rule both sides share).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from longboat.protocol.bodies import BrokerData, TopicRouteData
from longboat.protocol.topic_names import auto_created_queue_nums
from longboat.protocol.types import PERM_READ, PERM_WRITE, MessageQueue


@dataclass(slots=True)
class TopicRoute:
    topic: str
    data: TopicRouteData
    publish_queues: list[MessageQueue] = field(default_factory=list)
    subscribe_queues: list[MessageQueue] = field(default_factory=list)
    # True when built from the auto-create topic's route because the topic itself has none.
    via_default_topic: bool = False

    @classmethod
    def build(
        cls, topic: str, data: TopicRouteData, *, default_queue_nums: int | None = None
    ) -> TopicRoute:
        """The route of `topic`; `default_queue_nums` is set when `data` is TBW102's route."""
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
        return cls(
            topic=topic,
            data=data,
            publish_queues=publish,
            subscribe_queues=subscribe,
            via_default_topic=default_queue_nums is not None,
        )

    @property
    def brokers(self) -> list[BrokerData]:
        return self.data.broker_datas

    def master_addr(self, broker_name: str) -> str | None:
        for b in self.data.broker_datas:
            if b.broker_name == broker_name:
                return b.master_addr
        return None

    def same_as(self, other: TopicRoute | None) -> bool:
        """Whether a refresh changed anything a producer or consumer acts on."""
        return other is not None and self.data.to_dict() == other.data.to_dict()
