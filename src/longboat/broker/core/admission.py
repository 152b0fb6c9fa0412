"""What a request must pass before the core serves it, for every protocol.

A send, in RocketMQ's order (AbstractSendMessageProcessor.msgCheck): the broker is writable,
the topic name is legal, it is not one of the broker's own topics (nor the auto-create topic,
a dead-letter topic, the cluster's or broker's name), a retry topic exists already (a
consumer's heartbeat creates it: a send never makes up a group), it exists or is
auto-created through the default topic (TBW102, remoting only: a v2 client names none), it is
writable, the queue id is in range (negative: the broker picks one).  A transactional half is
refused in a batch and when `rejectTransactionMessage` is set.  Every stored message carries
the broker's CLUSTER property.  The disk-backlog refusal is the append's
(`append.Appender.admit_waiting`): it depends on what the send waits for.

A read (pull, pop): the broker is readable, the topic exists and is readable, the queue id is
one of its read queues.

Every check raises `Refusal` with RocketMQ's remark; configuration is read per call, as the
broker's settings are live.
"""

from __future__ import annotations

import random

from longboat.broker.config import BrokerConfig
from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.state.topics import TopicManager
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.properties import Prop, properties_text_problem, property_marker
from longboat.protocol.topic_names import (
    AUTO_CREATE_TOPIC_KEY,
    DLQ_GROUP_TOPIC_PREFIX,
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    is_lmq,
    validate_topic,
)
from longboat.protocol.types import PERM_READ, PERM_WRITE

_CLUSTER_MARKER = property_marker(Prop.CLUSTER)


class Admission:
    def __init__(self, config: BrokerConfig, topics: TopicManager) -> None:
        self.config = config
        self.topics = topics

    # ------------------------------------------------------------------ sending

    def send_topic(
        self, topic: str, default_topic: str | None = None, default_queue_nums: int = 0
    ) -> TopicConfig:
        """The config of the topic a send goes to, created through `default_topic` when that
        may be inherited (None: never created)."""
        cfg = self.config
        if not cfg.broker_permission & PERM_WRITE:
            raise Refusal(
                Reason.BROKER_NOT_WRITABLE,
                f"the broker[{cfg.broker_name}] sending message is forbidden",
            )
        problem = validate_topic(topic)
        if problem is not None:
            raise Refusal(Reason.ILLEGAL_TOPIC, f"{problem} (the sender's error)")
        if self._reserved_for_send(topic):
            raise Refusal(
                Reason.SYSTEM_TOPIC,
                f"sending message to topic[{topic}] is forbidden: the name is reserved "
                "(the sender's error)",
            )
        if default_topic is None:
            config = self.topics.get(topic)
        else:
            config = self.topics.create_on_send(topic, default_topic, default_queue_nums)
        if config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
            raise Refusal(
                Reason.RETRY_GROUP_NOT_FOUND,
                f"subscription group not exist, {group}: no consumer of it has connected to "
                f"the broker[{cfg.broker_name}], so it has no retry topic to send to",
            )
        if config is None:
            raise Refusal(
                Reason.TOPIC_NOT_FOUND,
                f"topic[{topic}] not exist, apply first please! "
                "(auto-creation is off or the default topic cannot be inherited)",
            )
        if not config.perm & PERM_WRITE:
            raise Refusal(
                Reason.TOPIC_NOT_PERMITTED, f"the topic[{topic}] sending message is forbidden"
            )
        return config

    def _reserved_for_send(self, topic: str) -> bool:
        """A name no producer writes to: the broker's bookkeeping (NOT_ALLOWED_SEND_TOPICS),
        the auto-create topic, a group's dead letters, the cluster's and broker's own names.
        (The trace topic is written by tracing clients; a retry topic by consumers.)"""
        cfg = self.config
        return (
            topic in NOT_ALLOWED_SEND_TOPICS
            or topic == AUTO_CREATE_TOPIC_KEY
            or topic.startswith(DLQ_GROUP_TOPIC_PREFIX)
            or topic in (cfg.broker_cluster_name, cfg.broker_name)
        )

    @staticmethod
    def check_properties(text: str) -> None:
        """The property string a sender wrote is well formed: one name and one value per
        segment (a separator inside a name or value would store other properties)."""
        if problem := properties_text_problem(text):
            raise Refusal(Reason.ILLEGAL_MESSAGE, f"{problem} (the sender's error)")

    @staticmethod
    def send_queue(config: TopicConfig, queue_id: int) -> int:
        """The queue a send is stored in: the one asked for, or (negative) one the broker
        picks among the write queues."""
        if queue_id < 0:
            return random.randrange(max(1, config.write_queue_nums))
        limit = max(config.read_queue_nums, config.write_queue_nums)
        if queue_id >= limit:
            raise Refusal(
                Reason.ILLEGAL_QUEUE,
                f"request queueId[{queue_id}] is illegal, topic {config.topic_name} "
                f"has {limit} queues",
            )
        return queue_id

    def admit_half(self, *, in_batch: bool) -> None:
        """A transactional half may be stored: not in a batch, not with
        rejectTransactionMessage."""
        cfg = self.config
        if in_batch or cfg.reject_transaction_message:
            raise Refusal(
                Reason.TRANSACTION_FORBIDDEN,
                f"the broker[{cfg.broker_name}] sending transaction message is forbidden"
                + (" in a batch" if in_batch else " (rejectTransactionMessage=true)"),
            )

    def stamp_cluster(self, properties: dict[str, str]) -> None:
        """Every stored message names the cluster of the broker that took it."""
        properties[Prop.CLUSTER] = self.config.broker_cluster_name

    def cluster_property(self) -> bytes:
        """The CLUSTER property as encoded bytes, appended to messages kept encoded."""
        return _CLUSTER_MARKER + self.config.broker_cluster_name.encode()

    # ------------------------------------------------------------------ reading

    def known_topic(self, topic: str, perm: int) -> TopicConfig:
        """The config of an existing topic whose perm allows any of `perm`'s bits."""
        problem = validate_topic(topic)
        if problem is not None:
            raise Refusal(Reason.ILLEGAL_TOPIC, f"{problem} (the client's error)")
        config = self.topics.get(topic)
        if config is None and self.config.enable_lmq and is_lmq(topic):
            # A light message queue has no topic config: one queue, as its files are.
            config = TopicConfig(topic, 1, 1, perm=PERM_READ | PERM_WRITE)
        if config is None:
            raise Refusal(Reason.TOPIC_NOT_FOUND, f"topic[{topic}] not exist, apply first please!")
        if not config.perm & perm:
            what = "sending message" if perm == PERM_WRITE else "pulling message"
            raise Refusal(Reason.TOPIC_NOT_PERMITTED, f"the topic[{topic}] {what} is forbidden")
        return config

    def read_topic(self, topic: str, queue_id: int | None = None) -> TopicConfig:
        """The config of a topic a consumer reads, `queue_id` one of its read queues (None:
        any, the broker picks)."""
        cfg = self.config
        if not cfg.broker_permission & PERM_READ:
            raise Refusal(
                Reason.BROKER_NOT_READABLE,
                f"the broker[{cfg.broker_name}] pulling message is forbidden",
            )
        config = self.known_topic(topic, PERM_READ)
        if queue_id is not None and not 0 <= queue_id < config.read_queue_nums:
            raise Refusal(
                Reason.ILLEGAL_QUEUE,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{config.read_queue_nums}]",
            )
        return config
