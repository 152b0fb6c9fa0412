"""Real ali-ons 3.12.0 frames decode to what the client meant, and survive a round trip.

`c2s` frames are byte-for-byte what the real Node.js client sent, so they are the ground truth
for the dialect we must accept (raw JSON numbers and booleans in ext fields, `extFields:{}`,
SEND_MESSAGE_V2's one-letter names, property strings with a trailing 0x02).  `s2c` frames are a
recording server's answers that the client accepted: one acceptable shape, checked for decoding.
"""

from __future__ import annotations

import hashlib

import orjson
import pytest

from longboat.protocol import FrameDecoder, RemotingCommand, SerializeType, encode_frame
from longboat.protocol.bodies import HeartbeatData, TopicRouteData
from longboat.protocol.compression import COMPRESS_OVER, decompress_body
from longboat.protocol.header_fields import Header
from longboat.protocol.headers import (
    ConsumerGroupHeader,
    ConsumerSendMsgBackRequestHeader,
    GetRouteInfoRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueueRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.message import decode_record, decode_records, encode_message
from longboat.protocol.properties import (
    PROPERTY_SEPARATOR,
    properties_to_string,
    string_to_properties,
)
from longboat.protocol.sysflags import MessageSysFlag, PullSysFlag
from longboat.protocol.table_bodies import decode_consumer_id_list
from longboat.protocol.tags import java_string_hash

from .vector_data import SHARED_ALI_ONS, VECTOR_DIR, Vector, java_ext, vectors

C2S = vectors("c2s")
ALL = vectors()

# The typed header of every request kind ali-ons sent in the captures.
REQUEST_HEADERS: dict[str, type[Header]] = {
    "GET_ROUTEINFO_BY_TOPIC": GetRouteInfoRequestHeader,
    "SEND_MESSAGE_V2": SendMessageRequestHeaderV2,
    "PULL_MESSAGE": PullMessageRequestHeader,
    "QUERY_CONSUMER_OFFSET": QueryConsumerOffsetRequestHeader,
    "UPDATE_CONSUMER_OFFSET": UpdateConsumerOffsetRequestHeader,
    "GET_MAX_OFFSET": QueueRequestHeader,
    "GET_CONSUMER_LIST_BY_GROUP": ConsumerGroupHeader,
    "CONSUMER_SEND_MSG_BACK": ConsumerSendMsgBackRequestHeader,
    "UNREGISTER_CLIENT": UnregisterClientRequestHeader,
}


def _decode_one(frame: bytes) -> RemotingCommand:
    decoder = FrameDecoder()
    decoder.feed(frame)
    cmd = decoder.next_command()
    assert cmd is not None
    assert decoder.buffered == 0
    assert decoder.next_command() is None
    return cmd


def _ids(vs: list[Vector]) -> list[str]:
    return [v.id for v in vs]


def test_the_captures_cover_every_request_kind() -> None:
    assert len(C2S) > 100
    assert {v.name for v in C2S} == set(REQUEST_HEADERS) | {"HEART_BEAT"}


def test_committed_copy_matches_the_shared_reference() -> None:
    """The copy against the reference's SHA-256 sums, recorded beside it when it was copied
    (checked in any clone), and against the reference folder itself when it sits beside the
    clone."""
    lines = (VECTOR_DIR / "SHA256SUMS").read_text().splitlines()  # "<sha256>  <name>"
    recorded = {name: digest for digest, name in (line.split() for line in lines)}
    copied = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in VECTOR_DIR.glob("*.jsonl")
    }
    assert copied == recorded
    if SHARED_ALI_ONS.is_dir():
        shared = sorted(p.name for p in SHARED_ALI_ONS.glob("*.jsonl"))
        assert shared == sorted(copied)
        for name in shared:
            assert (VECTOR_DIR / name).read_bytes() == (SHARED_ALI_ONS / name).read_bytes(), name


@pytest.mark.parametrize("vector", C2S, ids=_ids(C2S))
def test_client_frame_decodes_to_the_recorded_header_and_body(vector: Vector) -> None:
    cmd = _decode_one(vector.frame)
    h = vector.header
    assert cmd.serialize_type == SerializeType.JSON == vector.serialize_type
    assert cmd.code == h["code"] == vector.code
    assert cmd.opaque == h["opaque"]
    assert cmd.flag == h["flag"]
    assert not cmd.is_response
    assert cmd.version == h["version"] == 121
    assert cmd.language.name == h["language"]
    assert cmd.remark == h.get("remark")
    assert cmd.ext_fields == java_ext(h.get("extFields"))
    assert all(isinstance(v, str) for v in cmd.ext_fields.values())
    assert cmd.body == vector.body


@pytest.mark.parametrize("vector", C2S, ids=_ids(C2S))
def test_client_frame_reencodes_to_an_equivalent_frame(vector: Vector) -> None:
    cmd = _decode_one(vector.frame)
    frame = encode_frame(cmd)
    assert _decode_one(frame) == cmd
    # Same framing and body; the header differs only in JSON key order and in writing
    # ext values as the strings Java writes.
    hlen = int.from_bytes(frame[5:8], "big")
    assert frame[4] == 0
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert frame[8 + hlen :] == vector.body
    header = orjson.loads(frame[8 : 8 + hlen])
    original = dict(vector.header)
    assert header.pop("serializeTypeCurrentRPC") == "JSON"
    assert header.pop("extFields", {}) == java_ext(original.pop("extFields", None))
    assert header == original


@pytest.mark.parametrize("vector", ALL, ids=_ids(ALL))
def test_every_captured_frame_decodes_split_at_every_byte(vector: Vector) -> None:
    whole = _decode_one(vector.frame)
    decoder = FrameDecoder()
    got = []
    for i in range(len(vector.frame)):
        decoder.feed(vector.frame[i : i + 1])
        got += decoder.commands()
    assert got == [whole]
    assert decoder.buffered == 0


def test_a_whole_capture_decodes_as_one_stream() -> None:
    stream = b"".join(v.frame for v in ALL)
    decoder = FrameDecoder()
    decoder.feed(stream)
    cmds = decoder.commands()
    assert [c.code for c in cmds] == [v.code for v in ALL]
    assert [c.is_response for c in cmds] == [v.direction == "s2c" for v in ALL]


# --------------------------------------------------------------------------- typed requests


@pytest.mark.parametrize("vector", C2S, ids=_ids(C2S))
def test_request_header_types_and_flattens_back_to_the_same_ext_fields(vector: Vector) -> None:
    cmd = _decode_one(vector.frame)
    cls = REQUEST_HEADERS.get(vector.name)
    if cls is None:
        assert vector.name == "HEART_BEAT"
        assert cmd.ext_fields == {}
        return
    header = cls.from_ext(cmd.ext_fields)
    assert header.to_ext() == cmd.ext_fields


def test_send_message_v2_short_names() -> None:
    sends = vectors("c2s", "SEND_MESSAGE_V2")
    assert len(sends) == 4
    compressed = []
    for v in sends:
        assert v.decoded is not None
        ext = v.header["extFields"]
        h = SendMessageRequestHeaderV2.from_ext(_decode_one(v.frame).ext_fields)
        assert h.producerGroup == ext["a"] == "CAP_PRODUCER_GROUP"
        assert h.topic == ext["b"] == "CAP_TOPIC"
        assert h.defaultTopic == "TBW102"
        assert h.defaultTopicQueueNums == 4
        assert h.queueId == ext["e"]
        assert h.sysFlag == ext["f"]
        assert h.bornTimestamp == ext["g"] > 1_700_000_000_000
        assert h.flag == 0
        assert h.reconsumeTimes == 0
        assert h.unitMode is False
        assert h.maxReconsumeTimes is None and h.batch is None
        # ali-ons writes a separator after every pair; the parser does not care.
        assert h.properties is not None and h.properties.endswith(PROPERTY_SEPARATOR)
        assert string_to_properties(h.properties) == v.decoded["properties"]
        body = decompress_body(v.body, h.sysFlag)
        if h.sysFlag & MessageSysFlag.COMPRESSED:
            assert len(body) >= COMPRESS_OVER > len(v.body)
        else:
            assert body == v.body
        compressed.append(bool(h.sysFlag & MessageSysFlag.COMPRESSED))
    assert any(compressed)  # one capture is over the 4 KiB threshold


def test_pull_message_headers_and_sys_flag_bits() -> None:
    pulls = vectors("c2s", "PULL_MESSAGE")
    assert pulls
    for v in pulls:
        assert v.decoded is not None
        h = PullMessageRequestHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert h.consumerGroup == "CAP_CONSUMER_GROUP"
        assert h.maxMsgNums == 32
        assert h.suspendTimeoutMillis == 15000
        assert h.subscription is not None and h.subVersion > 0
        assert h.expressionType is None  # ali-ons omits it for tag subscriptions
        bits = v.decoded["sysFlag_bits"]
        flag = h.sysFlag
        assert bool(flag & PullSysFlag.COMMIT_OFFSET) == bits["commitOffset"]
        assert bool(flag & PullSysFlag.SUSPEND) == bits["suspend"]
        assert bool(flag & PullSysFlag.SUBSCRIPTION) == bits["subscription"]
        assert bool(flag & PullSysFlag.CLASS_FILTER) == bits["classFilter"]
        assert h.sysFlag in (6, 7)
        assert h.commitOffset >= -1  # -1: ali-ons has no offset for the queue yet


def test_heartbeat_body() -> None:
    beats = vectors("c2s", "HEART_BEAT")
    assert beats
    for v in beats:
        hb = HeartbeatData.from_json(_decode_one(v.frame).body)
        expected = v.body_json
        assert hb.client_id == expected["clientID"]
        assert hb.producer_groups == [p["groupName"] for p in expected["producerDataSet"]]
        assert [c.group_name for c in hb.consumer_data_set] == [
            c["groupName"] for c in expected["consumerDataSet"]
        ]
        for consumer, raw in zip(hb.consumer_data_set, expected["consumerDataSet"], strict=True):
            assert consumer.consume_type == raw["consumeType"] == "CONSUME_PASSIVELY"
            assert consumer.message_model == raw["messageModel"]
            assert consumer.consume_from_where == raw["consumeFromWhere"]
            for sub, raw_sub in zip(
                consumer.subscription_data_set, raw["subscriptionDataSet"], strict=True
            ):
                assert sub.topic == raw_sub["topic"]
                assert sub.sub_string == raw_sub["subString"]
                assert sub.sub_version == raw_sub["subVersion"]
                assert "expressionType" not in raw_sub and sub.expression_type == "TAG"
                assert sub.tags_set == raw_sub["tagsSet"]
                assert sub.code_set == [java_string_hash(t) for t in raw_sub["tagsSet"]]
        assert HeartbeatData.from_json(hb.to_json()) == hb
    subs = {
        s.topic
        for v in beats
        for c in HeartbeatData.from_json(v.body).consumer_data_set
        for s in c.subscription_data_set
    }
    assert "%RETRY%CAP_CONSUMER_GROUP" in subs


def test_consumer_send_msg_back() -> None:
    (v,) = vectors("c2s", "CONSUMER_SEND_MSG_BACK")
    h = ConsumerSendMsgBackRequestHeader.from_ext(_decode_one(v.frame).ext_fields)
    assert (h.group, h.delayLevel, h.maxReconsumeTimes, h.unitMode) == (
        "CAP_CONSUMER_GROUP",
        0,
        16,
        False,
    )
    assert h.originTopic == "CAP_TOPIC"
    # ali-ons sends the offset message id; its commit-log offset is the header's offset.
    assert h.offset == 300
    assert h.originMsgId is not None
    host, port, offset = decode_offset_msg_id(h.originMsgId)
    assert (host, offset) == ("127.0.0.1", h.offset)
    assert port > 0


def test_offset_requests() -> None:
    for v in vectors("c2s", "UPDATE_CONSUMER_OFFSET"):
        h = UpdateConsumerOffsetRequestHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert h.consumerGroup == "CAP_CONSUMER_GROUP" and h.queueId >= 0
        assert h.commitOffset >= -1
        assert not _decode_one(v.frame).is_oneway  # ali-ons never sets the oneway bit
    for v in vectors("c2s", "QUERY_CONSUMER_OFFSET"):
        q = QueryConsumerOffsetRequestHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert q.setZeroIfNotFound is None
    for v in vectors("c2s", "GET_MAX_OFFSET"):
        m = QueueRequestHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert m.topic.endswith(("CAP_TOPIC", "CAP_CONSUMER_GROUP"))


def test_unregister_client_and_route_requests() -> None:
    for v in vectors("c2s", "UNREGISTER_CLIENT"):
        u = UnregisterClientRequestHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert u.clientID.startswith("127.0.0.1@")
        assert (u.producerGroup is None) != (u.consumerGroup is None)
    for v in vectors("c2s", "GET_ROUTEINFO_BY_TOPIC"):
        r = GetRouteInfoRequestHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert r.topic == v.header["extFields"]["topic"]
        assert r.acceptStandardJsonOnly is None


# --------------------------------------------------------------------------- server answers


def _answers(request_name: str, response_name: str | None = None) -> list[Vector]:
    """s2c answers to the given request kind, paired by file, connection and opaque."""
    asked = {(v.file, v.conn, v.header["opaque"]) for v in C2S if v.name == request_name}
    return [
        v
        for v in ALL
        if v.direction == "s2c"
        and (v.file, v.conn, v.header["opaque"]) in asked
        and (response_name is None or v.name == response_name)
    ]


def test_pull_bodies_decode_as_message_records() -> None:
    found = [v for v in ALL if v.direction == "s2c" and v.decoded and "messages" in v.decoded]
    assert len(found) == 2
    for v in found:
        assert v.decoded is not None
        cmd = _decode_one(v.frame)
        h = PullMessageResponseHeader.from_ext(cmd.ext_fields)
        msgs = decode_records(cmd.body)
        assert len(msgs) == len(v.decoded["messages"])
        assert h.nextBeginOffset == msgs[-1].queue_offset + 1
        pos = 0
        for msg, want in zip(msgs, v.decoded["messages"], strict=True):
            assert msg.topic == want["topic"]
            assert msg.queue_offset == want["queueOffset"]
            assert msg.commit_log_offset == want["commitLogOffset"]
            assert msg.reconsume_times == want.get("reconsumeTimes", 0)
            assert msg.properties == want["properties"]
            assert msg.body == want["body"].encode()
            if "msgId" in want:
                assert msg.offset_msg_id == msg.msg_id == want["msgId"]
            # The recorder wrote ali-ons-style properties with a trailing 0x02; apart from that
            # section (and so the size), our encoding of the record is the same byte for byte.
            assert decode_record(cmd.body, pos) == msg
            record = cmd.body[pos : pos + msg.store_size]
            ours = encode_message(msg)
            our_props = properties_to_string(msg.properties).encode()
            their_props = record[91 + len(msg.body) + len(msg.topic.encode()) :]
            assert their_props.endswith(b"\x02")
            assert string_to_properties(their_props.decode()) == msg.properties
            assert record[4 : -len(their_props) - 2] == ours[4 : -len(our_props) - 2]
            pos += msg.store_size


def test_pull_answers_carry_the_four_offset_headers() -> None:
    answers = _answers("PULL_MESSAGE")
    assert answers
    for v in answers:
        h = PullMessageResponseHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert h.minOffset <= h.nextBeginOffset <= h.maxOffset


def test_other_answers_type() -> None:
    for v in _answers("GET_ROUTEINFO_BY_TOPIC", "SUCCESS"):
        route = TopicRouteData.from_json(_decode_one(v.frame).body)
        assert route.to_dict()["queueDatas"] == v.body_json["queueDatas"]
        assert [b.broker_addrs for b in route.broker_datas] == [
            {int(k): a for k, a in b["brokerAddrs"].items()} for b in v.body_json["brokerDatas"]
        ]
    for v in _answers("GET_CONSUMER_LIST_BY_GROUP", "SUCCESS"):
        ids = decode_consumer_id_list(_decode_one(v.frame).body)
        assert ids == v.body_json["consumerIdList"]
    for v in _answers("SEND_MESSAGE_V2", "SUCCESS"):
        s = SendMessageResponseHeader.from_ext(_decode_one(v.frame).ext_fields)
        assert decode_offset_msg_id(s.msgId)[0] == "127.0.0.1"
    for v in _answers("GET_MAX_OFFSET", "SUCCESS"):
        assert OffsetResponseHeader.from_ext(_decode_one(v.frame).ext_fields).offset >= 0
