"""The broker's topics: which exist, with how many queues and which permissions.

Backed by the store's persisted `TopicConfigTable`; this layer adds RocketMQ's creation rules:
the `TBW102` default topic (perm 7 = read | write | inherit, `defaultTopicQueueNums` queues)
through which a send to an unknown topic auto-creates it, `%RETRY%<group>` topics created on a
consumer's heartbeat and `%DLQ%<group>` topics on its first dead letter.  Every creation is
followed at once by a registration with the name servers (`on_change`, told which topics
changed so only they are sent), so a client routed by the name server finds the topic within
a round trip instead of after the next 30 s refresh.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from longboat.protocol.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from longboat.protocol.topic_names import (
    AUTO_CREATE_TOPIC_KEY,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    auto_created_queue_nums,
)
from longboat.protocol.types import PERM_INHERIT, PERM_READ, PERM_WRITE
from longboat.store import TopicConfigTable

log = logging.getLogger(__name__)

PERM_READ_WRITE = PERM_READ | PERM_WRITE


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


class TopicManager:
    def __init__(
        self,
        table: TopicConfigTable,
        *,
        auto_create: bool,
        default_queue_nums: int,
        schedule_queue_nums: int,
        on_change: Callable[[list[TopicConfig] | None], None],
        trace_topic: str | None = None,
    ) -> None:
        """`on_change(configs)` is called after every creation or update with the configs
        written, and `on_change(None)` after a deletion (the controller re-registers with the
        name servers: those topics, or the whole table); `trace_topic` is created at
        bootstrap (traceTopicEnable)."""
        self.table = table
        self.auto_create = auto_create
        self.default_queue_nums = default_queue_nums
        self._schedule_queue_nums = schedule_queue_nums
        self._on_change = on_change
        self._trace_topic = trace_topic

    def bootstrap(self) -> None:
        """Create the broker's own topics: TBW102 when auto-creation is on (and remove it when
        it was turned off, so clients stop being routed through it), the schedule topic, and the
        trace topic when one is asked for (one queue, as RocketMQ creates it)."""
        if self.auto_create:
            self._ensure(
                TopicConfig(
                    AUTO_CREATE_TOPIC_KEY,
                    self.default_queue_nums,
                    self.default_queue_nums,
                    PERM_READ_WRITE | PERM_INHERIT,
                ),
                notify=False,
            )
        elif self.table.delete(AUTO_CREATE_TOPIC_KEY):
            log.info("autoCreateTopicEnable=false: removed the %s topic", AUTO_CREATE_TOPIC_KEY)
        self._ensure(
            TopicConfig(
                SCHEDULE_TOPIC,
                self._schedule_queue_nums,
                self._schedule_queue_nums,
                PERM_READ_WRITE,
            ),
            notify=False,
        )
        if self._trace_topic:
            self._ensure(TopicConfig(self._trace_topic, 1, 1, PERM_READ_WRITE), notify=False)

    # ------------------------------------------------------------------ reading

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def all(self) -> dict[str, TopicConfig]:
        return self.table.all()

    def data_version(self) -> DataVersion:
        return self.table.data_version

    def wrapper(self) -> TopicConfigSerializeWrapper:
        """The table and its version, as REGISTER_BROKER and GET_ALL_TOPIC_CONFIG carry it."""
        return TopicConfigSerializeWrapper(self.table.all(), self.table.data_version)

    # ------------------------------------------------------------------ creating

    def create_on_send(
        self, topic: str, default_topic: str, requested_queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """The config of `topic`, created from `default_topic` if it does not exist and the
        default topic may be inherited (RocketMQ's createTopicInSendMessageMethod): queues =
        min(requested, default's write queues), perm = the default's without INHERIT.
        None when the topic does not exist and cannot be created (a retry topic never is:
        a send would make up a consumer group)."""
        config = self.table.get(topic)
        if config is not None or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return config  # a group's heartbeat creates its retry topic, never a send
        base = self.table.get(default_topic)
        if base is None or not base.perm & PERM_INHERIT:
            return None
        queues = auto_created_queue_nums(requested_queue_nums, base.write_queue_nums)
        return self._ensure(
            TopicConfig(
                topic, queues, queues, base.perm & ~PERM_INHERIT, "SINGLE_TAG", topic_sys_flag
            )
        )

    def ensure_retry_topic(self, group: str, queue_nums: int = 1) -> TopicConfig:
        """`%RETRY%<group>` (perm 6), created with `queue_nums` queues if missing."""
        return self._ensure(
            TopicConfig(retry_topic(group), queue_nums, queue_nums, PERM_READ_WRITE)
        )

    def ensure_dlq_topic(self, group: str) -> TopicConfig:
        """`%DLQ%<group>`: one queue, readable so operators can inspect and resend."""
        return self._ensure(TopicConfig(dlq_topic(group), 1, 1, PERM_READ_WRITE))

    def create_topic(self, config: TopicConfig) -> None:
        """Create or replace a topic (admin)."""
        self.table.put(config)
        log.info(
            "topic %s: %d read / %d write queues, perm %d",
            config.topic_name,
            config.read_queue_nums,
            config.write_queue_nums,
            config.perm,
        )
        self._on_change([config])

    def follow(self, configs: dict[str, TopicConfig]) -> bool:
        """Make the table the master's (a slave's topic sync): changed and new topics put,
        missing ones dropped; True (and re-registered) when anything changed."""
        written = []
        for name, config in configs.items():
            if self.table.get(name) != config:
                self.table.put(config)
                written.append(config)
        deleted = False
        for name in set(self.all()) - set(configs):
            deleted |= self.table.delete(name)
        if deleted or written:
            self._on_change(None if deleted else written)
        return deleted or bool(written)

    def delete_topic(self, topic: str) -> bool:
        deleted = self.table.delete(topic)
        if deleted:
            self._on_change(None)
        return deleted

    def _ensure(self, config: TopicConfig, *, notify: bool = True) -> TopicConfig:
        existing = self.table.get(config.topic_name)
        if existing is not None:
            return existing
        self.table.put(config)
        log.info(
            "created topic %s (%d queues, perm %d)",
            config.topic_name,
            config.write_queue_nums,
            config.perm,
        )
        if notify:
            self._on_change([config])
        return config
