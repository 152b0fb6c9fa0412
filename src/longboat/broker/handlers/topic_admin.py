"""Admin codes: topics, consumer progress, runtime figures, group settings.

UPDATE_AND_CREATE_TOPIC (17) creates or reconfigures a topic and re-registers with the name
servers at once, so its route exists when the call returns; system topics and the broker's
own cluster and broker names are refused.  GET_ALL_TOPIC_CONFIG (21) is the topic table with
its data version; GET_TOPIC_CONFIG (351, RocketMQ 5's) is one topic's config, which mqadmin 5
reads to tell a static topic (Longboat serves none: no queue mapping) before its figures.
GET_CONSUME_STATS (208) is, per queue of the group's topics, where the queue
ends, where the group is, and when the last consumed message was stored (lag time).
GET_TOPIC_STATS_INFO (202) is, per queue of a topic, its offset range and when its last message
was stored (`mqadmin topicStatus`).  DELETE_TOPIC_IN_BROKER (215) forgets a topic's config and
re-registers, so the route drops it; as RocketMQ's, it leaves committed offsets, and it leaves
the queues' data to retention: a topic created again under the same name continues its queues'
offsets instead of reusing them (a consumer's committed offset never points past a queue's end).
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) stores a group's retry settings (retryQueueNums,
retryMaxTimes) for send-back; GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) answers every configured
group with the table's data version (what a slave copies from its master).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode, fastjson
from longboat.protocol.bodies import SubscriptionGroupConfig, TopicConfig
from longboat.protocol.headers import (
    CreateTopicRequestHeader,
    GetConsumeStatsRequestHeader,
    TopicRequestHeader,
)
from longboat.protocol.table_bodies import (
    ConsumeStats,
    OffsetWrapper,
    TopicOffset,
    encode_topic_stats,
)
from longboat.protocol.topic_names import admin_topic_refusal, validate_group
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.feature_host import FeatureHost


class AdminProcessor:
    def __init__(self, controller: FeatureHost) -> None:
        self.controller = controller

    # ------------------------------------------------------------------ topics

    def topic_refusal(self, topic: str) -> str | None:
        """Why an admin may not create `topic`, None when it may."""
        cfg = self.controller.config
        if topic in (cfg.broker_cluster_name, cfg.broker_name):
            return f"the topic {topic!r} is the broker's cluster or broker name, a reserved word"
        return admin_topic_refusal(topic)

    def queue_count_refusal(self, *counts: int) -> str | None:
        """Why a topic may not have these queue counts (below one, or over the cap every
        per-queue loop relies on), None when it may."""
        cap = self.controller.config.max_topic_queue_nums
        if min(counts) < 1:
            return f"a topic needs at least one queue (asked for {', '.join(map(str, counts))})"
        if max(counts) > cap:
            return (
                f"{max(counts)} queues is over the limit of {cap} queues per topic "
                f"(broker setting maxTopicQueueNums)"
            )
        return None

    def queue_ids(self, config: TopicConfig) -> range:
        """The queues a per-queue answer covers: bounded by the cap even for a topic table
        written before the cap existed."""
        return range(min(config.write_queue_nums, self.controller.config.max_topic_queue_nums))

    async def create_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = CreateTopicRequestHeader.from_ext(cmd.ext_fields)
        refusal = self.topic_refusal(header.topic) or self.queue_count_refusal(
            header.readQueueNums, header.writeQueueNums
        )
        if refusal is not None:
            return cmd.make_response(ResponseCode.INVALID_PARAMETER, refusal)
        config = TopicConfig(
            topic_name=header.topic,
            read_queue_nums=header.readQueueNums,
            write_queue_nums=header.writeQueueNums,
            perm=header.perm,
            topic_filter_type=header.topicFilterType,
            topic_sys_flag=header.topicSysFlag or 0,
            order=header.order,
        )
        self.controller.topics.create_topic(config)
        await self.controller.registered()  # routed once answered, as RocketMQ's increment
        return cmd.make_response()

    def all_topic_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=self.controller.topics.wrapper().to_json())

    def topic_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        topic = TopicRequestHeader.from_ext(cmd.ext_fields).topic
        config = self.controller.topics.get(topic)
        if config is None:
            remark = f"No topic in this broker. topic: {topic}"
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, remark)
        return cmd.make_response(body=fastjson.dumps(config.to_dict()))

    def topic_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        topic = TopicRequestHeader.from_ext(cmd.ext_fields).topic
        config = self.controller.topics.get(topic)
        if config is None:
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.controller.store
        table: dict[MessageQueue, TopicOffset] = {}
        for queue_id in self.queue_ids(config):
            low = max(store.min_offset(topic, queue_id), 0)
            high = max(store.max_offset(topic, queue_id), 0)
            last = (store.store_time_at(topic, queue_id, high - 1) or 0) if high > low else 0
            mq = MessageQueue(topic, self.controller.config.broker_name, queue_id)
            table[mq] = TopicOffset(low, high, last)
        return cmd.make_response(body=encode_topic_stats(table))

    async def delete_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        topic = TopicRequestHeader.from_ext(cmd.ext_fields).topic
        problem = admin_topic_refusal(topic)
        if problem is not None:
            return cmd.make_response(ResponseCode.INVALID_PARAMETER, problem)
        if self.controller.topics.delete_topic(topic):
            await self.controller.registered()
        return cmd.make_response()

    # ------------------------------------------------------------------ consumers

    def consume_stats(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = GetConsumeStatsRequestHeader.from_ext(cmd.ext_fields)
        return cmd.make_response(
            body=self.consume_stats_of(header.consumerGroup, header.topic).to_json()
        )

    def consume_stats_of(self, group: str, topic: str | None) -> ConsumeStats:
        """Per queue of `topic` (or of every topic the group committed offsets for)."""
        ctl = self.controller
        store, offsets = ctl.store, ctl.offsets
        topics = [topic] if topic else sorted(offsets.snapshot().get(group, {}))
        stats = ConsumeStats()
        for name in topics:
            config = ctl.topics.get(name)
            if config is None:
                continue
            committed = offsets.queue_offsets(group, name)
            for queue_id in self.queue_ids(config):
                consumer_offset = max(committed.get(queue_id, 0), 0)
                last = 0
                if consumer_offset > 0:
                    last = store.store_time_at(name, queue_id, consumer_offset - 1) or 0
                mq = MessageQueue(name, ctl.config.broker_name, queue_id)
                stats.offset_table[mq] = OffsetWrapper(
                    broker_offset=max(store.max_offset(name, queue_id), 0),
                    consumer_offset=consumer_offset,
                    last_timestamp=last,
                )
        return stats

    def update_subscription_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        config = SubscriptionGroupConfig.from_json(cmd.body)
        refusal = validate_group(config.group_name) or self.queue_count_refusal(
            max(1, config.retry_queue_nums)
        )
        if refusal is not None:
            return cmd.make_response(ResponseCode.INVALID_PARAMETER, refusal)
        self.controller.subscription_groups.put(config)
        return cmd.make_response()


def all_subscription_groups(controller: FeatureHost, cmd: RemotingCommand) -> RemotingCommand:
    return cmd.make_response(body=controller.subscription_groups.wrapper().to_json())


def install(controller: FeatureHost) -> None:
    admin = AdminProcessor(controller)
    router = controller.router
    router.register(RequestCode.UPDATE_AND_CREATE_TOPIC, admin.create_topic)
    router.register(RequestCode.GET_ALL_TOPIC_CONFIG, admin.all_topic_config)
    router.register(RequestCode.GET_TOPIC_CONFIG, admin.topic_config)
    router.register(RequestCode.GET_TOPIC_STATS_INFO, admin.topic_stats)
    router.register(RequestCode.DELETE_TOPIC_IN_BROKER, admin.delete_topic)
    router.register(RequestCode.GET_CONSUME_STATS, admin.consume_stats)
    router.register(
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, admin.update_subscription_group
    )
    router.register(
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        lambda conn, cmd: all_subscription_groups(controller, cmd),
    )
