"""Frames of Apache RocketMQ's Java client 4.9.8 (and Longboat's answers it accepted) decode to
what the client meant and encode back to the same bytes.

The captures (tests/protocol/vectors/java-4.9.8, written by tests/peers/capture_java_vectors.py
through a recording proxy) cover every request the Java scenarios of tests/java send, the
`mqadmin` commands' included. `c2s`
frames are byte for byte what the Java client wrote: its JSON headers with every ext value a
string, keys in fastjson's sorted order, `serializeTypeCurrentRPC`, version 409 (V4_9_8).
"""

from __future__ import annotations

import pytest

from longboat.protocol import (
    FrameDecoder,
    RemotingCommand,
    ResponseCode,
    SerializeType,
    encode_frame,
)
from longboat.protocol.batch import decode_batch
from longboat.protocol.bodies import HeartbeatData, SubscriptionGroupConfig
from longboat.protocol.compression import COMPRESS_OVER, decompress_body
from longboat.protocol.header_fields import Header
from longboat.protocol.headers import (
    ConsumerGroupHeader,
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    GetConsumeStatsRequestHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    QueueRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeaderV2,
    TopicRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from longboat.protocol.message import MessageExt, decode_records
from longboat.protocol.properties import Prop, string_to_properties
from longboat.protocol.sysflags import MessageSysFlag, PullSysFlag
from longboat.protocol.table_bodies import LockBatchRequest

from .vector_data import JAVA, Vector, vectors

ALL = vectors(client=JAVA)
C2S = vectors("c2s", client=JAVA)
JAVA_V4_9_8 = 409

# The typed header of every request kind with ext fields; the others carry a body only.
REQUEST_HEADERS: dict[str, type[Header]] = {
    "GET_ROUTEINFO_BY_TOPIC": GetRouteInfoRequestHeader,
    "SEND_MESSAGE_V2": SendMessageRequestHeaderV2,
    "SEND_BATCH_MESSAGE": SendMessageRequestHeaderV2,
    "PULL_MESSAGE": PullMessageRequestHeader,
    "QUERY_CONSUMER_OFFSET": QueryConsumerOffsetRequestHeader,
    "UPDATE_CONSUMER_OFFSET": UpdateConsumerOffsetRequestHeader,
    "GET_MAX_OFFSET": QueueRequestHeader,
    "GET_MIN_OFFSET": QueueRequestHeader,
    "SEARCH_OFFSET_BY_TIMESTAMP": SearchOffsetRequestHeader,
    "GET_CONSUMER_LIST_BY_GROUP": ConsumerGroupHeader,
    "CONSUMER_SEND_MSG_BACK": ConsumerSendMsgBackRequestHeader,
    "UNREGISTER_CLIENT": UnregisterClientRequestHeader,
    "QUERY_MESSAGE": QueryMessageRequestHeader,
    "VIEW_MESSAGE_BY_ID": ViewMessageRequestHeader,
    # mqadmin's
    "UPDATE_AND_CREATE_TOPIC": CreateTopicRequestHeader,
    "GET_TOPIC_STATS_INFO": TopicRequestHeader,
    "QUERY_TOPIC_CONSUME_BY_WHO": TopicRequestHeader,
    "DELETE_TOPIC_IN_BROKER": TopicRequestHeader,
    "GET_CONSUMER_CONNECTION_LIST": ConsumerGroupHeader,
    "GET_CONSUME_STATS": GetConsumeStatsRequestHeader,
    "INVOKE_BROKER_TO_RESET_OFFSET": ResetOffsetRequestHeader,
}
BODY_ONLY = {
    "HEART_BEAT",
    "LOCK_BATCH_MQ",
    "UNLOCK_BATCH_MQ",
    "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
    "GET_BROKER_CLUSTER_INFO",
    "GET_BROKER_RUNTIME_INFO",
    "GET_BROKER_CONFIG",
    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
}
# Read from the ext fields as they come (the name server's one-field requests).
UNTYPED = {"DELETE_TOPIC_IN_NAMESRV"}
# Fields the 4.9.8 client adds for RocketMQ 5 proxies, which no 4.x request header declares and
# brokers ignore: `bname` (RpcRequestHeader: the broker a queue request is meant for; `n` in
# SEND_MESSAGE_V2's short names) and ReqT=0 (RequestType STREAM), added to every request by
# DefaultLitePullConsumer's StreamTypeRPCHook.
PROXY_FIELDS = {"bname", "n", "ReqT"}


def _decode(frame: bytes) -> RemotingCommand:
    decoder = FrameDecoder()
    decoder.feed(frame)
    cmd = decoder.next_command()
    assert cmd is not None and decoder.buffered == 0
    return cmd


def _ids(vs: list[Vector]) -> list[str]:
    return [v.id for v in vs]


def test_the_captures_cover_every_request_the_java_scenarios_send() -> None:
    assert {v.name for v in C2S} == set(REQUEST_HEADERS) | BODY_ONLY | UNTYPED


@pytest.mark.parametrize("vector", ALL, ids=_ids(ALL))
def test_frame_decodes_and_encodes_back_to_the_same_bytes(vector: Vector) -> None:
    cmd = _decode(vector.frame)
    assert cmd.code == vector.code
    assert cmd.is_response == (vector.direction == "s2c") or vector.name.startswith("NOTIFY")
    assert cmd.serialize_type == SerializeType.JSON
    assert cmd.body == vector.body
    assert encode_frame(cmd) == vector.frame


@pytest.mark.parametrize("vector", C2S, ids=_ids(C2S))
def test_request_header_is_java_and_types_to_the_same_ext_fields(vector: Vector) -> None:
    cmd = _decode(vector.frame)
    assert cmd.version == vector.header["version"] == JAVA_V4_9_8
    assert cmd.language.name == "JAVA"
    assert cmd.ext_fields == vector.header.get("extFields", {})
    ext = {k: v for k, v in cmd.ext_fields.items() if k not in PROXY_FIELDS}
    assert ("ReqT" in cmd.ext_fields) == vector.file.startswith("lite_pull")
    if vector.name in UNTYPED:
        assert ext["topic"] and ext["clusterName"]
        return
    cls = REQUEST_HEADERS.get(vector.name)
    if cls is None:
        assert vector.name in BODY_ONLY and not ext
        return
    assert cls.from_ext(cmd.ext_fields).to_ext() == ext


def test_every_frame_decodes_split_at_every_byte_as_one_stream() -> None:
    stream = b"".join(v.frame for v in ALL)
    decoder = FrameDecoder()
    got = []
    for i in range(0, len(stream), 7):
        decoder.feed(stream[i : i + 7])
        got += decoder.commands()
    assert [c.code for c in got] == [v.code for v in ALL]
    assert decoder.buffered == 0


def _headers(name: str, file: str | None = None) -> list[tuple[Vector, RemotingCommand]]:
    return [
        (v, _decode(v.frame)) for v in C2S if v.name == name and (file is None or v.file == file)
    ]


def _pulled(v: Vector) -> list[MessageExt]:
    cmd = _decode(v.frame)
    if cmd.code != ResponseCode.SUCCESS or not cmd.body or "nextBeginOffset" not in cmd.ext_fields:
        return []
    return decode_records(cmd.body)


def test_sends_every_mode() -> None:
    sends = _headers("SEND_MESSAGE_V2", "producer")
    # sync, async, one-way and selector sends of 2 each; one-way ones have the oneway flag.
    modes = sorted(cmd.body.split(b"-")[0].decode() for _, cmd in sends)
    assert modes == sorted(["sync", "async", "oneway", "ordered"] * 2)
    assert sorted(cmd.body for _, cmd in sends if cmd.is_oneway) == [b"oneway-0", b"oneway-1"]
    for _, cmd in sends:
        h = SendMessageRequestHeaderV2.from_ext(cmd.ext_fields)
        assert (h.topic, h.defaultTopic, h.defaultTopicQueueNums) == ("CAP_TOPIC", "TBW102", 4)
        props = string_to_properties(h.properties or "")
        assert props["color"] == "blue" and props[Prop.TAGS] in ("TagA", "TagB")
        assert Prop.UNIQ_KEY in props and props[Prop.KEYS].startswith("key-")

    [(_, batch)] = _headers("SEND_BATCH_MESSAGE")
    h = SendMessageRequestHeaderV2.from_ext(batch.ext_fields)
    assert h.batch is True
    items = decode_batch(batch.body)
    assert [i.body for i in items] == [b"batch-0", b"batch-1"]
    assert all(Prop.UNIQ_KEY in i.properties and i.properties["color"] == "blue" for i in items)


def test_a_compressed_body_and_a_delay_level() -> None:
    [(_, cmd)] = _headers("SEND_MESSAGE_V2", "producer_compressed_delayed")
    h = SendMessageRequestHeaderV2.from_ext(cmd.ext_fields)
    assert h.sysFlag & MessageSysFlag.COMPRESSED
    body = decompress_body(cmd.body, h.sysFlag)
    assert len(body) == 5000 >= COMPRESS_OVER > len(cmd.body)
    assert string_to_properties(h.properties or "")[Prop.DELAY] == "2"


def test_consumer_requests() -> None:
    pulls = _headers("PULL_MESSAGE")
    assert pulls
    for v, cmd in pulls:
        h = PullMessageRequestHeader.from_ext(cmd.ext_fields)
        # pullBatchSize: the push consumer's 32, the lite pull consumer's 10.
        assert h.maxMsgNums == (10 if v.file.startswith("lite_pull") else 32)
        assert h.expressionType == "TAG"
        assert h.sysFlag & PullSysFlag.SUSPEND or h.suspendTimeoutMillis == 0
    beats = _headers("HEART_BEAT")
    assert beats
    for _, cmd in beats:
        hb = HeartbeatData.from_json(cmd.body)
        assert HeartbeatData.from_json(hb.to_json()) == hb
    models = {
        c.message_model
        for _, cmd in beats
        for c in HeartbeatData.from_json(cmd.body).consumer_data_set
    }
    assert models == {"CLUSTERING", "BROADCASTING"}

    # A failed delivery goes back by its UNIQ_KEY and commit-log offset, as pulled.
    pulled = {
        (m.msg_id, m.commit_log_offset)
        for v in ALL
        if v.direction == "s2c" and v.file == "push_concurrently_retry"
        for m in _pulled(v)
    }
    backs = _headers("CONSUMER_SEND_MSG_BACK")
    assert len(backs) == 3  # the three messages "A || B" selects fail once each
    for _, cmd in backs:
        back = ConsumerSendMsgBackRequestHeader.from_ext(cmd.ext_fields)
        assert (back.group, back.delayLevel, back.maxReconsumeTimes) == ("CAP_CONSUMER", 0, 2)
        assert (back.originMsgId, back.offset) in pulled

    # The orderly consumer locks (and at shutdown unlocks) its queues, its retry topic's too.
    for name in ("LOCK_BATCH_MQ", "UNLOCK_BATCH_MQ"):
        requests = [LockBatchRequest.from_json(cmd.body) for _, cmd in _headers(name)]
        assert {r.consumer_group for r in requests} == {"CAP_ORDERLY_CONSUMER"}
        assert {mq.topic for r in requests for mq in r.mq_set} == {
            "CAP_ORDERLY",
            "%RETRY%CAP_ORDERLY_CONSUMER",
        }


def test_lookups_and_offset_searches() -> None:
    [(_, view)] = _headers("VIEW_MESSAGE_BY_ID", "lookups")
    assert ViewMessageRequestHeader.from_ext(view.ext_fields).offset >= 0
    queries = [
        QueryMessageRequestHeader.from_ext(c.ext_fields)
        for _, c in _headers("QUERY_MESSAGE", "lookups")
    ]
    # viewMessage(topic, uniqKey) asks by key with the unique-key flag; queryMessage by key.
    assert {q.key for q in queries if q.uniqueKeyQuery is False} == {"key-0", "nokey"}
    # A UNIQ_KEY: the client's IPv4 or IPv6 address, pid, class loader hash, time and counter.
    assert [len(q.key) in (32, 56) for q in queries if q.uniqueKeyQuery] == [True]
    [(_, search)] = _headers("SEARCH_OFFSET_BY_TIMESTAMP")
    assert SearchOffsetRequestHeader.from_ext(search.ext_fields).topic == "CAP_EXPIRED"


def test_mqadmin_requests() -> None:
    [(_, create)] = _headers("UPDATE_AND_CREATE_TOPIC")
    h = CreateTopicRequestHeader.from_ext(create.ext_fields)
    assert (h.topic, h.readQueueNums, h.writeQueueNums, h.perm) == ("CAP_ADMIN", 2, 2, 6)
    [(_, group)] = _headers("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP")
    config = SubscriptionGroupConfig.from_json(group.body)
    assert (config.group_name, config.retry_max_times) == ("CAP_ADMIN_GROUP", 5)
    [(_, reset)] = _headers("INVOKE_BROKER_TO_RESET_OFFSET")
    r = ResetOffsetRequestHeader.from_ext(reset.ext_fields)
    assert (r.group, r.topic, r.timestamp) == ("CAP_CONSUMER", "CAP_PUSH", -1)  # "-s now"
    deletes = {v.name: cmd.ext_fields["topic"] for v, cmd in _headers("DELETE_TOPIC_IN_BROKER")}
    deletes |= {v.name: cmd.ext_fields["topic"] for v, cmd in _headers("DELETE_TOPIC_IN_NAMESRV")}
    assert deletes == {
        "DELETE_TOPIC_IN_BROKER": "CAP_ADMIN",
        "DELETE_TOPIC_IN_NAMESRV": "CAP_ADMIN",
    }
