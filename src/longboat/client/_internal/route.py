"""A topic's route as the client uses it: which queues to write, which to read, where brokers are.

Built from the name server's `TopicRouteData` (either JSON dialect; `protocol.bodies` parses
both); which queues a route offers is `protocol.route_queues`' rule (Java's
`MQClientInstance.topicRouteData2TopicPublishInfo` / `topicRouteData2TopicSubscribeInfo`),
the one a broker applies too when it assigns queues.  A route learned through the auto-create
topic (TBW102) is re-labelled with the real topic and given, per broker, the queues the broker
will create the topic with on the first send.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from longboat.protocol.bodies import BrokerData, TopicRouteData
from longboat.protocol.route_queues import route_queues
from longboat.protocol.types import MessageQueue


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
        queues = route_queues(topic, data, default_queue_nums=default_queue_nums)
        return cls(
            topic=topic,
            data=data,
            publish_queues=queues.publish,
            subscribe_queues=queues.subscribe,
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
