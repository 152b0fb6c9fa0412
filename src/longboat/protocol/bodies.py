"""JSON bodies: routes, broker registration, subscription groups, heartbeats and connections;
the bodies that are one list or one table (consumer ids, locks, offsets, stats) are
`table_bodies`.

Readers go through `fastjson.loads`, so both standard JSON and fastjson's dialect parse.
Writers emit standard JSON with sorted keys, except the route and cluster bodies, which a
name server writes with bare integer keys for old clients (see `TopicRouteData.to_json`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from longboat.protocol import fastjson
from longboat.protocol.json_body import JsonDocument, json_object, load_json_object, malformed
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import MASTER_ID, PERM_READ_WRITE

# --------------------------------------------------------------------------- routes


@dataclass(slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_READ_WRITE
    topic_sys_flag: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QueueData:
        return cls(
            broker_name=str(d["brokerName"]),
            read_queue_nums=int(d.get("readQueueNums", 0)),
            write_queue_nums=int(d.get("writeQueueNums", 0)),
            perm=int(d.get("perm", 6)),
            # Spelled topicSynFlag up to 4.8.0.
            topic_sys_flag=int(d.get("topicSysFlag", d.get("topicSynFlag", 0)) or 0),
        )


@dataclass(slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerAddrs": dict(sorted(self.broker_addrs.items())),
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BrokerData:
        addrs = json_object(d.get("brokerAddrs") or {}, "brokerAddrs")
        return cls(
            cluster=str(d.get("cluster", "")),
            broker_name=str(d["brokerName"]),
            broker_addrs={int(k): str(v) for k, v in addrs.items()},
        )


@dataclass(slots=True)
class TopicRouteData:
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "brokerDatas": [b.to_dict() for b in self.broker_datas],
            "filterServerTable": self.filter_server_table,
        }
        if self.order_topic_conf is not None:
            d["orderTopicConf"] = self.order_topic_conf
        d["queueDatas"] = [q.to_dict() for q in self.queue_datas]
        return d

    def to_json(self, *, standard: bool = True) -> bytes:
        """Standard JSON for clients >= 4.9.4, fastjson's bare integer keys for older ones."""
        d = self.to_dict()
        return fastjson.dumps(d) if standard else fastjson.dumps_bare_int_keys(d)

    @classmethod
    def from_json(cls, data: bytes | str) -> TopicRouteData:
        d = load_json_object(data, "route data")
        with malformed("route data"):
            return cls(
                queue_datas=[QueueData.from_dict(q) for q in d.get("queueDatas") or []],
                broker_datas=[BrokerData.from_dict(b) for b in d.get("brokerDatas") or []],
                order_topic_conf=d.get("orderTopicConf"),
                filter_server_table=d.get("filterServerTable") or {},
            )


@dataclass(slots=True)
class ClusterInfo:
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)

    def members(self) -> list[tuple[str, str, int, str]]:
        """(cluster, broker name, broker id, address) of every registered broker, sorted;
        id 0 is a master."""
        rows: list[tuple[str, str, int, str]] = []
        for cluster_name, names in sorted(self.cluster_addr_table.items()):
            for name in sorted(names):
                data = self.broker_addr_table.get(name)
                if data is not None:
                    rows += [
                        (cluster_name, name, i, a) for i, a in sorted(data.broker_addrs.items())
                    ]
        return rows

    def to_json(self, *, standard: bool = False) -> bytes:
        d = {
            "brokerAddrTable": {k: v.to_dict() for k, v in sorted(self.broker_addr_table.items())},
            "clusterAddrTable": {k: sorted(v) for k, v in sorted(self.cluster_addr_table.items())},
        }
        return fastjson.dumps(d) if standard else fastjson.dumps_bare_int_keys(d)

    @classmethod
    def from_json(cls, data: bytes | str) -> ClusterInfo:
        d = load_json_object(data, "cluster info")
        with malformed("cluster info"):
            return cls(
                broker_addr_table={
                    k: BrokerData.from_dict(v) for k, v in (d.get("brokerAddrTable") or {}).items()
                },
                cluster_addr_table={
                    k: list(v) for k, v in (d.get("clusterAddrTable") or {}).items()
                },
            )


# --------------------------------------------------------------------------- broker registration


@dataclass(slots=True)
class DataVersion:
    timestamp: int = 0
    counter: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_dict(cls, d: Any) -> DataVersion:
        d = json_object(d or {}, "dataVersion")
        return cls(timestamp=int(d.get("timestamp", 0)), counter=int(d.get("counter", 0)))

    def next(self, now_s: float) -> DataVersion:
        """The version of the table's next change, made at `now_s` (epoch seconds)."""
        return DataVersion(timestamp=int(now_s * 1000), counter=self.counter + 1)


TOPIC_FILTER_TYPES = {name: name for name in ("SINGLE_TAG", "MULTI_TAG")}


@dataclass(slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 4
    write_queue_nums: int = 4
    perm: int = PERM_READ_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def __post_init__(self) -> None:
        # The filter type held as one shared string: a table decoded from JSON or a
        # registration body would otherwise keep a copy per topic (6 MB at 100,000 topics).
        self.topic_filter_type = TOPIC_FILTER_TYPES.get(
            self.topic_filter_type, self.topic_filter_type
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopicConfig:
        return cls(
            topic_name=str(d["topicName"]),
            read_queue_nums=int(d.get("readQueueNums", 4)),
            write_queue_nums=int(d.get("writeQueueNums", 4)),
            perm=int(d.get("perm", 6)),
            topic_filter_type=str(d.get("topicFilterType", "SINGLE_TAG")),
            topic_sys_flag=int(d.get("topicSysFlag", 0) or 0),
            order=bool(d.get("order", False)),
        )


@dataclass(slots=True)
class TopicConfigSerializeWrapper(JsonDocument):
    """The broker's topic table with its version: GET_ALL_TOPIC_CONFIG's body, and the core of
    REGISTER_BROKER's."""

    _what: ClassVar[str] = "topic config wrapper"

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_dict(),
            "topicConfigTable": {k: v.to_dict() for k, v in self.topic_config_table.items()},
        }

    @classmethod
    def from_dict(cls, d: Any) -> TopicConfigSerializeWrapper:
        d = json_object(d or {}, "topicConfigSerializeWrapper")
        return cls(
            topic_config_table={
                k: TopicConfig.from_dict(v) for k, v in (d.get("topicConfigTable") or {}).items()
            },
            data_version=DataVersion.from_dict(d.get("dataVersion")),
        )


@dataclass(slots=True)
class RegisterBrokerBody:
    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)
    filter_server_list: list[str] = field(default_factory=list)

    def to_json(self) -> bytes:
        wrapper = TopicConfigSerializeWrapper(self.topic_config_table, self.data_version)
        return fastjson.dumps(
            {
                "filterServerList": self.filter_server_list,
                "topicConfigSerializeWrapper": wrapper.to_dict(),
            }
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> RegisterBrokerBody:
        d = load_json_object(data, "register body")
        with malformed("register body"):
            wrapper = TopicConfigSerializeWrapper.from_dict(d.get("topicConfigSerializeWrapper"))
            return cls(
                topic_config_table=wrapper.topic_config_table,
                data_version=wrapper.data_version,
                filter_server_list=list(d.get("filterServerList") or []),
            )


@dataclass(slots=True)
class SubscriptionGroupConfig(JsonDocument):
    """A consumer group's broker-side settings (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's body);
    defaults are RocketMQ's."""

    _what: ClassVar[str] = "subscription group config"

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    # RocketMQ 5: the group consumes FIFO (a message group's next message waits for the ack).
    consume_message_orderly: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "consumeMessageOrderly": self.consume_message_orderly,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }

    @classmethod
    def from_dict(cls, d: Any) -> SubscriptionGroupConfig:
        d = json_object(d, "subscription group config")
        defaults = cls(group_name="")
        return cls(
            group_name=str(d["groupName"]),
            consume_enable=bool(d.get("consumeEnable", defaults.consume_enable)),
            consume_from_min_enable=bool(
                d.get("consumeFromMinEnable", defaults.consume_from_min_enable)
            ),
            consume_broadcast_enable=bool(
                d.get("consumeBroadcastEnable", defaults.consume_broadcast_enable)
            ),
            retry_queue_nums=int(d.get("retryQueueNums", defaults.retry_queue_nums)),
            retry_max_times=int(d.get("retryMaxTimes", defaults.retry_max_times)),
            broker_id=int(d.get("brokerId", defaults.broker_id)),
            which_broker_when_consume_slowly=int(
                d.get("whichBrokerWhenConsumeSlowly", defaults.which_broker_when_consume_slowly)
            ),
            notify_consumer_ids_changed_enable=bool(
                d.get("notifyConsumerIdsChangedEnable", defaults.notify_consumer_ids_changed_enable)
            ),
            consume_message_orderly=bool(
                d.get("consumeMessageOrderly", defaults.consume_message_orderly)
            ),
        )


@dataclass(slots=True)
class SubscriptionGroupWrapper(JsonDocument):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body (and config/subscriptionGroup.json): every
    configured group's settings with the table's data version, which a slave compares to
    know whether to take the table."""

    _what: ClassVar[str] = "subscription group wrapper"

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_dict(),
            "subscriptionGroupTable": {
                n: c.to_dict() for n, c in self.subscription_group_table.items()
            },
        }

    @classmethod
    def from_dict(cls, d: Any) -> SubscriptionGroupWrapper:
        d = json_object(d or {}, "subscription group wrapper")
        return cls(
            subscription_group_table={
                str(n): SubscriptionGroupConfig.from_dict(c)
                for n, c in (d.get("subscriptionGroupTable") or {}).items()
            },
            data_version=DataVersion.from_dict(d.get("dataVersion")),
        )


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper:
    """GET_ALL_CONSUMER_OFFSET's body (and config/consumerOffset.json): `"topic@group"` →
    queue id → the group's next offset.  Java writes the queue ids unquoted; both read
    either form."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return fastjson.dumps({"offsetTable": self.offset_table})

    @classmethod
    def from_json(cls, data: bytes | str) -> ConsumerOffsetSerializeWrapper:
        d = load_json_object(data, "consumer offset wrapper")
        with malformed("consumer offset wrapper"):
            table = json_object(d.get("offsetTable") or {}, "offsetTable")
            return cls(
                {
                    str(key): {int(q): int(o) for q, o in json_object(queues, key).items()}
                    for key, queues in table.items()
                }
            )


# --------------------------------------------------------------------------- heartbeat


@dataclass(slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = "*"
    sub_version: int = 0
    expression_type: str = "TAG"
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    class_filter_mode: bool = False

    @classmethod
    def of(cls, topic: str, expression: str, sub_version: int) -> SubscriptionData:
        expr = TagExpression.parse(expression)
        return cls(
            topic=topic,
            sub_string=expr.expression,
            sub_version=sub_version,
            tags_set=sorted(expr.tags),
            code_set=sorted(expr.codes),
        )

    @classmethod
    def sql92(cls, topic: str, expression: str, sub_version: int) -> SubscriptionData:
        """An SQL92 subscription (Java's `FilterAPI.build` for `MessageSelector.bySql`)."""
        return cls(
            topic=topic, sub_string=expression, sub_version=sub_version, expression_type="SQL92"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": self.code_set,
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": self.tags_set,
            "topic": self.topic,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SubscriptionData:
        return cls(
            topic=str(d["topic"]),
            sub_string=str(d.get("subString") or "*"),
            sub_version=int(d.get("subVersion") or 0),
            expression_type=str(d.get("expressionType") or "TAG"),
            tags_set=[str(t) for t in d.get("tagsSet") or []],
            code_set=[int(c) for c in d.get("codeSet") or []],
            class_filter_mode=bool(d.get("classFilterMode", False)),
        )


@dataclass(slots=True)
class ConsumerData:
    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.consume_from_where,
            "consumeType": self.consume_type,
            "groupName": self.group_name,
            "messageModel": self.message_model,
            "subscriptionDataSet": [s.to_dict() for s in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConsumerData:
        return cls(
            group_name=str(d["groupName"]),
            consume_type=str(d.get("consumeType") or "CONSUME_PASSIVELY"),
            message_model=str(d.get("messageModel") or "CLUSTERING"),
            consume_from_where=str(d.get("consumeFromWhere") or "CONSUME_FROM_LAST_OFFSET"),
            subscription_data_set=[
                SubscriptionData.from_dict(s) for s in d.get("subscriptionDataSet") or []
            ],
            unit_mode=bool(d.get("unitMode", False)),
        )


@dataclass(slots=True)
class HeartbeatData:
    client_id: str
    producer_groups: list[str] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)

    def to_json(self) -> bytes:
        return fastjson.dumps(
            {
                "clientID": self.client_id,
                "consumerDataSet": [c.to_dict() for c in self.consumer_data_set],
                "producerDataSet": [{"groupName": g} for g in self.producer_groups],
            }
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> HeartbeatData:
        d = load_json_object(data, "heartbeat")
        with malformed("heartbeat"):
            return cls(
                client_id=str(d["clientID"]),
                producer_groups=[str(p["groupName"]) for p in d.get("producerDataSet") or []],
                consumer_data_set=[
                    ConsumerData.from_dict(c) for c in d.get("consumerDataSet") or []
                ],
            )


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """One member's connection, as GET_CONSUMER_CONNECTION_LIST reports it."""

    client_id: str
    client_addr: str
    language: str = "JAVA"
    version: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "clientAddr": self.client_addr,
            "clientId": self.client_id,
            "language": self.language,
            "version": self.version,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClientConnection:
        return cls(
            client_id=str(d.get("clientId", "")),
            client_addr=str(d.get("clientAddr", "")),
            language=str(d.get("language") or "JAVA"),
            version=int(d.get("version") or 0),
        )


@dataclass(slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST's body: a group's live members and its subscriptions."""

    connections: list[ClientConnection] = field(default_factory=list)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"

    def to_json(self) -> bytes:
        return fastjson.dumps(
            {
                "connectionSet": [c.to_dict() for c in self.connections],
                "consumeFromWhere": self.consume_from_where,
                "consumeType": self.consume_type,
                "messageModel": self.message_model,
                "subscriptionTable": {t: s.to_dict() for t, s in self.subscriptions.items()},
            }
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> ConsumerConnection:
        d = load_json_object(data, "consumer connection")
        with malformed("consumer connection"):
            return cls(
                connections=[ClientConnection.from_dict(c) for c in d.get("connectionSet") or []],
                subscriptions={
                    str(t): SubscriptionData.from_dict(s)
                    for t, s in (d.get("subscriptionTable") or {}).items()
                },
                consume_type=str(d.get("consumeType") or "CONSUME_PASSIVELY"),
                message_model=str(d.get("messageModel") or "CLUSTERING"),
                consume_from_where=str(d.get("consumeFromWhere") or "CONSUME_FROM_LAST_OFFSET"),
            )
