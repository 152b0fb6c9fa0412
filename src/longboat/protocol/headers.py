"""Typed request and response headers of every command Longboat serves or sends.

Field names are the Java field names (the ext-field keys); see header_fields for the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from longboat.protocol.codes import RequestCode
from longboat.protocol.header_fields import Header, JavaInt
from longboat.protocol.sysflags import PullSysFlag

# --------------------------------------------------------------------------- shared openings
#
# Headers whose first fields are the same in Java, in the same order, extend one of these:
# a subclass's own fields follow the base's, so the wire order is the Java declaration's.


@dataclass(frozen=True, slots=True)
class QueueRequestHeader(Header):
    """One queue of a topic: GET_MAX_OFFSET, GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME,
    and the opening of SEARCH_OFFSET_BY_TIMESTAMP's header."""

    topic: str
    queueId: JavaInt


@dataclass(frozen=True, slots=True)
class GroupQueueHeader(Header):
    """One consumer group's view of one queue: POLLING_INFO's header, and the opening of
    every pull, pop, ack and offset request's."""

    consumerGroup: str
    topic: str
    queueId: JavaInt


# --------------------------------------------------------------------------- sending


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeader(Header):
    """SEND_MESSAGE (10) header; SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE use the short names."""

    producerGroup: str
    topic: str
    defaultTopic: str
    defaultTopicQueueNums: JavaInt
    queueId: JavaInt
    sysFlag: JavaInt
    bornTimestamp: int
    flag: JavaInt
    properties: str | None = None
    reconsumeTimes: JavaInt | None = None
    unitMode: bool | None = None
    maxReconsumeTimes: JavaInt | None = None
    batch: bool | None = None

    def to_ext_for_queue(self, queue_id: int) -> dict[str, str]:
        """`to_ext` with `queueId` set to `queue_id`: a producer picks the queue per attempt,
        and copying a frozen header to change one field costs more than encoding all of it."""
        ext = self.to_ext()
        ext[self.wire_names.get("queueId", "queueId")] = str(queue_id)
        return ext


@dataclass(frozen=True, slots=True)
class SendMessageRequestHeaderV2(SendMessageRequestHeader):
    wire_names: ClassVar[dict[str, str]] = {
        "producerGroup": "a",
        "topic": "b",
        "defaultTopic": "c",
        "defaultTopicQueueNums": "d",
        "queueId": "e",
        "sysFlag": "f",
        "bornTimestamp": "g",
        "flag": "h",
        "properties": "i",
        "reconsumeTimes": "j",
        "unitMode": "k",
        "maxReconsumeTimes": "l",
        "batch": "m",
    }


def broker_name_field(code: int) -> str:
    """The ext field that names the broker group a request is for.

    RocketMQ 5's remoting clients set it on every request about a queue (`RpcRequestHeader`'s
    `bname`; SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE carry it as their one-letter `n`): its
    proxy forwards such a request to the broker so named, and refuses one without it
    (VERSION_NOT_SUPPORTED).  Brokers read only their header class's fields, so they ignore it.
    """
    if code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        return "n"
    return "bname"


@dataclass(frozen=True, slots=True)
class SendMessageResponseHeader(Header):
    msgId: str
    queueId: JavaInt
    queueOffset: int
    transactionId: str | None = None
    MSG_REGION: str | None = None
    TRACE_ON: str | None = None
    # RocketMQ 5.3: set for a timer or delayed message, for RECALL_MESSAGE.
    recallHandle: str | None = None


@dataclass(frozen=True, slots=True)
class RecallMessageRequestHeader(Header):
    topic: str
    recallHandle: str
    producerGroup: str | None = None


@dataclass(frozen=True, slots=True)
class RecallMessageResponseHeader(Header):
    msgId: str


# --------------------------------------------------------------------------- pulling


@dataclass(frozen=True, slots=True)
class PullMessageRequestHeader(GroupQueueHeader):
    queueOffset: int
    maxMsgNums: JavaInt
    sysFlag: JavaInt
    commitOffset: int
    suspendTimeoutMillis: int
    subVersion: int = 0
    subscription: str | None = None
    expressionType: str | None = None

    @classmethod
    def pulling(
        cls,
        *,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msgs: int,
        suspend_ms: int = 0,
        commit_offset: int | None = None,
        subscription: str | None = "*",
        expression_type: str = "TAG",
        sub_version: int = 0,
        lite: bool = False,
    ) -> PullMessageRequestHeader:
        """A pull whose flags follow from what it carries, the one place they are set:
        `suspend_ms` > 0 lets the broker hold it that long, `commit_offset` stores the group's
        offset with it, `subscription` (an expression of `expression_type`; None leaves it to
        the group's heartbeat) travels with it, `lite` marks a lite-pull consumer's."""
        flag = PullSysFlag.build(
            commit_offset=commit_offset is not None,
            suspend=suspend_ms > 0,
            subscription=subscription is not None,
            lite_pull=lite,
        )
        return cls(
            consumerGroup=group,
            topic=topic,
            queueId=queue_id,
            queueOffset=offset,
            maxMsgNums=max_msgs,
            sysFlag=flag,
            commitOffset=commit_offset or 0,
            suspendTimeoutMillis=suspend_ms,
            subVersion=sub_version,
            subscription=subscription,
            expressionType=None if subscription is None else expression_type,
        )


@dataclass(frozen=True, slots=True)
class PullMessageResponseHeader(Header):
    suggestWhichBrokerId: int
    nextBeginOffset: int
    minOffset: int
    maxOffset: int


# --------------------------------------------------------------------------- offsets


@dataclass(frozen=True, slots=True)
class QueryConsumerOffsetRequestHeader(GroupQueueHeader):
    setZeroIfNotFound: bool | None = None


@dataclass(frozen=True, slots=True)
class OffsetResponseHeader(Header):
    """Answer of QUERY_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int


@dataclass(frozen=True, slots=True)
class UpdateConsumerOffsetRequestHeader(GroupQueueHeader):
    commitOffset: int


@dataclass(frozen=True, slots=True)
class SearchOffsetRequestHeader(QueueRequestHeader):
    timestamp: int


@dataclass(frozen=True, slots=True)
class EarliestMsgStoreTimeResponseHeader(Header):
    timestamp: int


# --------------------------------------------------------------------------- clients


@dataclass(frozen=True, slots=True)
class UnregisterClientRequestHeader(Header):
    clientID: str
    producerGroup: str | None = None
    consumerGroup: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeader(Header):
    """GET_CONSUMER_LIST_BY_GROUP and NOTIFY_CONSUMER_IDS_CHANGED."""

    consumerGroup: str


@dataclass(frozen=True, slots=True)
class ConsumerSendMsgBackRequestHeader(Header):
    offset: int
    group: str
    delayLevel: JavaInt
    originMsgId: str | None = None
    originTopic: str | None = None
    unitMode: bool | None = None
    maxReconsumeTimes: JavaInt | None = None


# --------------------------------------------------------------------------- lookups


@dataclass(frozen=True, slots=True)
class QueryMessageRequestHeader(Header):
    topic: str
    key: str
    maxNum: JavaInt
    beginTimestamp: int
    endTimestamp: int
    # Not a Java field but an extra ext field (MixAll.UNIQUE_MSG_QUERY_FLAG).
    uniqueKeyQuery: bool | None = None
    wire_names: ClassVar[dict[str, str]] = {"uniqueKeyQuery": "_UNIQUE_KEY_QUERY"}


@dataclass(frozen=True, slots=True)
class QueryMessageResponseHeader(Header):
    indexLastUpdateTimestamp: int
    indexLastUpdatePhyoffset: int


@dataclass(frozen=True, slots=True)
class ViewMessageRequestHeader(Header):
    offset: int


# --------------------------------------------------------------------------- admin


@dataclass(frozen=True, slots=True)
class CreateTopicRequestHeader(Header):
    topic: str
    defaultTopic: str
    readQueueNums: JavaInt
    writeQueueNums: JavaInt
    perm: JavaInt
    topicFilterType: str = "SINGLE_TAG"
    topicSysFlag: JavaInt | None = None
    order: bool = False


@dataclass(frozen=True, slots=True)
class EndTransactionRequestHeader(Header):
    producerGroup: str
    tranStateTableOffset: int
    commitLogOffset: int
    commitOrRollback: JavaInt
    msgId: str
    fromTransactionCheck: bool | None = None
    transactionId: str | None = None


@dataclass(frozen=True, slots=True)
class CheckTransactionStateRequestHeader(Header):
    """CHECK_TRANSACTION_STATE (39), broker to producer: what became of this half?"""

    tranStateTableOffset: int
    commitLogOffset: int
    msgId: str | None = None
    transactionId: str | None = None
    offsetMsgId: str | None = None


@dataclass(frozen=True, slots=True)
class GetConsumeStatsRequestHeader(Header):
    consumerGroup: str
    topic: str | None = None


@dataclass(frozen=True, slots=True)
class TopicRequestHeader(Header):
    """GET_TOPIC_STATS_INFO, DELETE_TOPIC_IN_BROKER, QUERY_TOPIC_CONSUME_BY_WHO."""

    topic: str


@dataclass(frozen=True, slots=True)
class ResetOffsetRequestHeader(Header):
    """INVOKE_BROKER_TO_RESET_OFFSET (from an admin) and RESET_CONSUMER_CLIENT_OFFSET (to each
    member); `timestamp` -1 means each queue's end."""

    topic: str
    group: str
    timestamp: int
    isForce: bool = False


@dataclass(frozen=True, slots=True)
class GetBrokerConfigResponseHeader(Header):
    version: str  # the configuration's DataVersion, as JSON


# --------------------------------------------------------------------------- name server


@dataclass(frozen=True, slots=True)
class GetRouteInfoRequestHeader(Header):
    topic: str
    acceptStandardJsonOnly: bool | None = None


@dataclass(frozen=True, slots=True)
class RegisterBrokerRequestHeader(Header):
    """`compressed`: the body is the compact zlib form (protocol.register_body).
    `incremental` (Longboat's; RocketMQ's name server ignores it and merges every
    registration): the body holds only the topics created or changed since the last one, to
    merge; without it the body is the whole table, and topics missing from it are dropped."""

    brokerName: str
    brokerAddr: str
    clusterName: str
    haServerAddr: str
    brokerId: int
    compressed: bool | None = None
    bodyCrc32: JavaInt | None = None
    incremental: bool | None = None


@dataclass(frozen=True, slots=True)
class RegisterBrokerResponseHeader(Header):
    haServerAddr: str | None = None
    masterAddr: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerIdentityHeader(Header):
    """UNREGISTER_BROKER and QUERY_DATA_VERSION."""

    brokerName: str
    brokerAddr: str
    clusterName: str
    brokerId: int


@dataclass(frozen=True, slots=True)
class QueryDataVersionResponseHeader(Header):
    changed: bool
