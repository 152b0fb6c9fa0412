"""Round trips of everything below the frame: message records (IPv4/IPv6, magic V2), property
strings, batch bodies, JSON bodies in both fastjson key styles, message ids, tag hashes,
compression and sys flags."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import random
import struct
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol import ProtocolError, fastjson
from longboat.protocol.batch import BatchItem, decode_batch, encode_batch
from longboat.protocol.bodies import (
    BrokerData,
    ClusterInfo,
    ConsumerData,
    DataVersion,
    HeartbeatData,
    QueueData,
    RegisterBrokerBody,
    SubscriptionData,
    TopicConfig,
    TopicRouteData,
)
from longboat.protocol.compression import COMPRESS_OVER, decompress_body, maybe_compress
from longboat.protocol.ids import (
    UniqKeyGenerator,
    decode_offset_msg_id,
    joined_offset_msg_ids,
    offset_msg_id,
    offset_msg_id_prefix,
)
from longboat.protocol.message import (
    MAGIC_V2,
    MessageExt,
    body_crc,
    decode_record,
    decode_records,
    encode_message,
)
from longboat.protocol.properties import properties_to_string, string_to_properties
from longboat.protocol.sysflags import MessageSysFlag, PullSysFlag
from longboat.protocol.table_bodies import (
    ConsumeStats,
    LockBatchRequest,
    OffsetWrapper,
    decode_consumer_id_list,
    decode_lock_batch_response,
    decode_offset_table,
    decode_topic_list,
    encode_consumer_id_list,
    encode_lock_batch_response,
    encode_offset_table,
    encode_topic_list,
)
from longboat.protocol.tags import TagExpression, java_string_hash, tags_code
from longboat.protocol.types import MessageQueue

_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
# Property names and values cannot hold the separators, and Java drops empty ones.
_PROP_TEXT = st.text(
    st.characters(codec="utf-8", blacklist_characters="\x01\x02"), min_size=1, max_size=20
)
_PROPS = st.dictionaries(_PROP_TEXT, _PROP_TEXT, max_size=6)
_IPV4 = st.binary(min_size=4, max_size=4)
_IPV6 = st.binary(min_size=16, max_size=16)
_NAME = st.text(st.characters(codec="utf-8"), max_size=30)


@st.composite
def messages(draw: st.DrawFn) -> MessageExt:
    topic = draw(st.text(max_size=40).filter(lambda t: len(t.encode()) <= 127))
    born_host = draw(_IPV4 | _IPV6)
    store_host = draw(_IPV4 | _IPV6)
    sys_flag = draw(_INT32) & ~(MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOSTADDRESS_V6)
    if len(born_host) == 16:
        sys_flag |= MessageSysFlag.BORNHOST_V6
    if len(store_host) == 16:
        sys_flag |= MessageSysFlag.STOREHOSTADDRESS_V6
    return MessageExt(
        topic=topic,
        body=draw(st.binary(max_size=200)),
        queue_id=draw(_INT32),
        flag=draw(_INT32),
        queue_offset=draw(_INT64),
        commit_log_offset=draw(_INT64),
        sys_flag=sys_flag,
        born_timestamp=draw(_INT64),
        born_host=born_host,
        born_port=draw(_INT32),
        store_timestamp=draw(_INT64),
        store_host=store_host,
        store_port=draw(_INT32),
        reconsume_times=draw(_INT32),
        prepared_transaction_offset=draw(_INT64),
        properties=draw(_PROPS),
    )


def _as_decoded(msg: MessageExt, record: bytes) -> MessageExt:
    return dataclasses.replace(msg, body_crc=body_crc(msg.body), store_size=len(record))


# --------------------------------------------------------------------------- records


@settings(max_examples=200, deadline=None)
@given(msgs=st.lists(messages(), min_size=1, max_size=4))
def test_records_round_trip_back_to_back(msgs: list[MessageExt]) -> None:
    records = [encode_message(m) for m in msgs]
    for msg, record in zip(msgs, records, strict=True):
        v6 = (len(msg.born_host) == 16) + (len(msg.store_host) == 16)
        topic, props = msg.topic.encode(), properties_to_string(msg.properties).encode()
        assert len(record) == 91 + 12 * v6 + len(msg.body) + len(topic) + len(props)
        assert struct.unpack_from(">i", record)[0] == len(record)
    assert decode_records(b"".join(records)) == [
        _as_decoded(m, r) for m, r in zip(msgs, records, strict=True)
    ]


def _to_magic_v2(record: bytes, msg: MessageExt) -> bytes:
    """The same record as a 5.x broker writes it for long topics: 2-byte topic length."""
    topic = msg.topic.encode()
    props_len = len(properties_to_string(msg.properties).encode())
    topic_at = len(record) - 2 - props_len - len(topic) - 1
    assert record[topic_at] == len(topic)
    v2 = (
        record[:topic_at] + struct.pack(">h", len(topic)) + record[topic_at + 1 :]
    )  # one byte longer
    return struct.pack(">ii", len(v2), MAGIC_V2) + v2[8:]


@settings(max_examples=100, deadline=None)
@given(msg=messages())
def test_magic_v2_records_decode(msg: MessageExt) -> None:
    v2 = _to_magic_v2(encode_message(msg), msg)
    assert decode_record(v2) == _as_decoded(msg, v2)


def test_long_topic_only_in_magic_v2() -> None:
    msg = MessageExt(topic="T" * 127, body=b"x")
    assert decode_record(encode_message(msg)).topic == msg.topic
    with pytest.raises(ValueError):
        encode_message(dataclasses.replace(msg, topic="T" * 128))
    long = dataclasses.replace(msg, topic="T" * 100)
    v2 = _to_magic_v2(encode_message(long), long)
    # Patch the topic to 300 characters: only the 2-byte length of V2 can say so.
    head = v2[: len(v2) - 2 - 2 - 100]
    v2 = head + struct.pack(">h", 300) + b"T" * 300 + struct.pack(">h", 0)
    v2 = struct.pack(">i", len(v2)) + v2[4:]
    assert decode_record(v2).topic == "T" * 300


def test_record_ids_and_hosts() -> None:
    msg = MessageExt(
        topic="T",
        body=b"hello",
        commit_log_offset=0x1234,
        store_host=bytes([127, 0, 0, 1]),
        store_port=10911,
        born_host=ipaddress.IPv6Address("::1").packed,
        born_port=5,
        properties={"UNIQ_KEY": "AB", "KEYS": "k1 k2", "TAGS": "TagA"},
    )
    back = decode_record(encode_message(msg))
    assert back.offset_msg_id == "7F00000100002A9F0000000000001234"
    assert back.msg_id == "AB"
    assert back.store_host_str == "127.0.0.1:10911"
    assert back.born_host_str == "::1:5"
    assert back.key_list == ["k1", "k2"]
    assert back.tags == "TagA"


def test_a_body_that_would_grow_is_not_compressed() -> None:
    body = os.urandom(COMPRESS_OVER * 4)
    assert maybe_compress(body, 0) == (body, 0)


def test_compressed_record_body_inflates_on_request() -> None:
    body = b"0123456789" * 1000
    stored, flag = maybe_compress(body, 0)
    msg = MessageExt(topic="T", body=stored, sys_flag=flag)
    record = encode_message(msg)
    assert decode_record(record).body == stored
    assert decode_record(record, decompress=True).body == body
    assert decode_records(record + record, decompress=True)[1].body == body


# --------------------------------------------------------------------------- properties


@given(props=_PROPS)
def test_property_strings_round_trip_in_java_and_ali_ons_forms(props: dict[str, str]) -> None:
    text = properties_to_string(props)
    assert string_to_properties(text) == props
    ali_ons = "".join(f"{k}\x01{v}\x02" for k, v in props.items())
    assert string_to_properties(ali_ons) == props


def test_property_reader_skips_malformed_segments_like_java() -> None:
    text = "\x02A\x01\x02\x01v\x02noseparator\x02K\x01V\x02\x02"
    assert string_to_properties(text) == {"K": "V"}


# --------------------------------------------------------------------------- batches


@settings(max_examples=100, deadline=None)
@given(
    items=st.lists(
        st.builds(BatchItem, body=st.binary(max_size=100), properties=_PROPS, flag=_INT32),
        max_size=6,
    )
)
def test_batch_bodies_round_trip(items: list[BatchItem]) -> None:
    data = encode_batch(items)
    assert decode_batch(data) == items
    pos = 0
    for item in items:  # TOTALSIZE = 22 + body + properties, magic and CRC written as 0
        total, magic, crc = struct.unpack_from(">iii", data, pos)
        props = properties_to_string(item.properties).encode()
        assert (total, magic, crc) == (22 + len(item.body) + len(props), 0, 0)
        pos += total


# --------------------------------------------------------------------------- JSON bodies

# remoting.md §7.1, byte for byte what a Java name server writes for a client < 4.9.4.
OLD_STYLE_ROUTE = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
    b'"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)


def test_route_data_in_both_styles_byte_for_byte() -> None:
    route = TopicRouteData.from_json(OLD_STYLE_ROUTE)
    assert route.broker_datas[0].master_addr == "10.0.0.5:10911"
    assert route.to_json(standard=False) == OLD_STYLE_ROUTE
    standard = OLD_STYLE_ROUTE.replace(b"{0:", b'{"0":')
    assert route.to_json(standard=True) == standard
    assert TopicRouteData.from_json(standard) == route


def test_route_data_accepts_the_pre_4_9_spelling_topic_syn_flag() -> None:
    old = OLD_STYLE_ROUTE.replace(b'"topicSysFlag":0', b'"topicSynFlag":3')
    assert TopicRouteData.from_json(old).queue_datas[0].topic_sys_flag == 3


_BROKER = st.builds(
    BrokerData,
    cluster=_NAME,
    broker_name=_NAME,
    broker_addrs=st.dictionaries(st.integers(0, 2**40), _NAME, max_size=3),
)
_QUEUE = st.builds(
    QueueData,
    broker_name=_NAME,
    read_queue_nums=_INT32,
    write_queue_nums=_INT32,
    perm=st.integers(0, 15),
    topic_sys_flag=_INT32,
)
_ROUTE = st.builds(
    TopicRouteData,
    queue_datas=st.lists(_QUEUE, max_size=3),
    broker_datas=st.lists(_BROKER, max_size=3),
    order_topic_conf=st.none() | _NAME,
    filter_server_table=st.dictionaries(_NAME, st.lists(_NAME, max_size=2), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(route=_ROUTE)
def test_route_data_round_trips_in_both_key_styles(route: TopicRouteData) -> None:
    assert TopicRouteData.from_json(route.to_json(standard=True)) == route
    assert TopicRouteData.from_json(route.to_json(standard=False)) == route


@settings(max_examples=50, deadline=None)
@given(
    table=st.dictionaries(_NAME, _BROKER, max_size=3),
    clusters=st.dictionaries(_NAME, st.lists(_NAME, max_size=3), max_size=2),
)
def test_cluster_info_round_trips(table: dict[str, BrokerData], clusters: dict) -> None:
    info = ClusterInfo(table, {k: sorted(v) for k, v in clusters.items()})
    assert ClusterInfo.from_json(info.to_json()) == info
    assert ClusterInfo.from_json(info.to_json(standard=True)) == info


_SUB = st.builds(
    SubscriptionData,
    topic=_NAME,
    sub_string=_NAME.filter(bool),
    sub_version=_INT64,
    expression_type=st.sampled_from(["TAG", "SQL92"]),
    tags_set=st.lists(_NAME, max_size=3),
    code_set=st.lists(_INT32, max_size=3),
    class_filter_mode=st.booleans(),
)
_CONSUMER = st.builds(
    ConsumerData,
    group_name=_NAME,
    consume_type=st.sampled_from(["CONSUME_PASSIVELY", "CONSUME_ACTIVELY"]),
    message_model=st.sampled_from(["CLUSTERING", "BROADCASTING"]),
    consume_from_where=st.sampled_from(["CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_TIMESTAMP"]),
    subscription_data_set=st.lists(_SUB, max_size=3),
    unit_mode=st.booleans(),
)
_MQ = st.builds(MessageQueue, topic=_NAME, broker_name=_NAME, queue_id=_INT32)


@settings(max_examples=100, deadline=None)
@given(
    hb=st.builds(
        HeartbeatData,
        client_id=_NAME,
        producer_groups=st.lists(_NAME, max_size=3),
        consumer_data_set=st.lists(_CONSUMER, max_size=2),
    )
)
def test_heartbeat_round_trips(hb: HeartbeatData) -> None:
    assert HeartbeatData.from_json(hb.to_json()) == hb


@settings(max_examples=100, deadline=None)
@given(
    table=st.dictionaries(
        _NAME,
        st.builds(
            TopicConfig,
            topic_name=_NAME,
            read_queue_nums=_INT32,
            write_queue_nums=_INT32,
            perm=st.integers(0, 15),
            topic_filter_type=st.sampled_from(["SINGLE_TAG", "MULTI_TAG"]),
            topic_sys_flag=_INT32,
            order=st.booleans(),
        ),
        max_size=3,
    ),
    version=st.builds(DataVersion, timestamp=_INT64, counter=_INT64),
)
def test_register_broker_body_round_trips(
    table: dict[str, TopicConfig], version: DataVersion
) -> None:
    body = RegisterBrokerBody(table, version, ["127.0.0.1:7000"])
    assert RegisterBrokerBody.from_json(body.to_json()) == body


@settings(max_examples=100, deadline=None)
@given(
    mqs=st.lists(_MQ, max_size=4, unique=True),
    offsets=st.lists(_INT64, min_size=4, max_size=4),
    names=st.lists(_NAME, max_size=3),
)
def test_small_bodies_round_trip(
    mqs: list[MessageQueue], offsets: list[int], names: list[str]
) -> None:
    lock = LockBatchRequest("g", "127.0.0.1@1", mqs)
    assert LockBatchRequest.from_json(lock.to_json()) == lock
    assert decode_lock_batch_response(encode_lock_batch_response(mqs)) == mqs
    assert decode_consumer_id_list(encode_consumer_id_list(names)) == names
    assert decode_topic_list(encode_topic_list(names)) == sorted(names)
    table = dict(zip(mqs, offsets, strict=False))
    assert decode_offset_table(encode_offset_table(table)) == table
    stats = ConsumeStats({mq: OffsetWrapper(o, o // 2, abs(o) % 1000) for mq, o in table.items()})
    assert ConsumeStats.from_json(stats.to_json()) == stats


def test_fastjson_object_keyed_offset_table() -> None:
    body = (
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42,'
        b'{"brokerName":"b","queueId":1,"topic":"T"}:7}}'
    )
    assert decode_offset_table(body) == {
        MessageQueue("T", "b", 0): 42,
        MessageQueue("T", "b", 1): 7,
    }
    stats = (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":99}}}'
    )
    assert ConsumeStats.from_json(stats) == ConsumeStats(
        {MessageQueue("T", "b", 3): OffsetWrapper(10, 4, 99)}, 1.5
    )


_JSON_SCALAR = st.none() | st.booleans() | _INT64 | st.text(max_size=10)
# Name keys cannot collide with integer keys once both are strings.
_JSON_KEY = st.text("abcxyzé_", max_size=8) | st.integers(-(10**6), 10**6)
_JSON = st.recursive(
    _JSON_SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_KEY, inner, max_size=4),
    max_leaves=20,
)


def _keys_as_strings(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _keys_as_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys_as_strings(v) for v in value]
    return value


@settings(max_examples=200, deadline=None)
@given(value=_JSON)
def test_fastjson_reader_takes_both_key_styles(value: object) -> None:
    expected = _keys_as_strings(value)
    assert fastjson.loads(fastjson.dumps(value)) == expected
    assert fastjson.loads(fastjson.dumps_bare_int_keys(value)) == expected

    # Mixed int/str keys that collide as strings ({1: .., "1": ..}) are not JSON-meaningful.
    if isinstance(expected, dict) and isinstance(value, dict) and len(expected) != len(value):
        return
    bare = fastjson.dumps_bare_int_keys(value)
    standard = fastjson.dumps(value)
    assert fastjson.loads(standard) == fastjson.loads(bare)
    if b"{" not in bare or bare == standard:
        assert fastjson.loads(bare) == expected


# --------------------------------------------------------------------------- ids


@given(host=_IPV4 | _IPV6, port=_INT32, offset=_INT64)
def test_offset_message_ids_round_trip(host: bytes, port: int, offset: int) -> None:
    text = str(ipaddress.ip_address(host))
    msg_id = offset_msg_id(text, port, offset)
    assert len(msg_id) == (32 if len(host) == 4 else 56)
    assert msg_id == msg_id.upper()
    assert decode_offset_msg_id(msg_id) == (text, port, offset)


@given(
    host=_IPV4 | _IPV6,
    port=_INT32,
    offsets=st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=70),
)
def test_a_batchs_offset_ids_join_as_each_offset_id_would(
    host: bytes, port: int, offsets: list[int]
) -> None:
    """A batch's send answer carries its ids comma-joined; built in one pass, they are the ids
    of each offset on its own."""
    text = str(ipaddress.ip_address(host))
    expected = ",".join(offset_msg_id(text, port, offset) for offset in offsets)
    assert joined_offset_msg_ids(offset_msg_id_prefix(host, port), offsets) == expected


def test_offset_message_id_example_and_bad_ids() -> None:
    assert offset_msg_id("127.0.0.1", 10911, 0x1234) == "7F00000100002A9F0000000000001234"
    for bad in ["", "XYZ", "7F000001", "7F00000100002A9F000000000000123"]:
        with pytest.raises(ProtocolError):
            decode_offset_msg_id(bad)


def uniq_keys(client_ip: str = "10.1.2.3", now_ms: int = 1_700_000_000_000) -> UniqKeyGenerator:
    return UniqKeyGenerator(client_ip, now_ms=lambda: now_ms, pid=0x1234, rng=random.Random(7))


def test_uniq_keys_are_unique_32_hex_digits() -> None:
    gen = uniq_keys()
    keys = [gen.next() for _ in range(5000)]
    assert len(set(keys)) == len(keys)
    assert all(len(k) == 32 and k == k.upper() and k.startswith("0A010203") for k in keys)
    int(keys[0], 16)


def test_uniq_key_layout_from_injected_clock_pid_and_randomness() -> None:
    """ip, pid, random, ms since the month began (local time), counter: all from what the
    caller passed in, so the same inputs give the same keys."""
    now = datetime(2026, 3, 5, 12, 0, 0)
    now_ms = int(now.timestamp() * 1000)
    month_ms = int(now.replace(day=1, hour=0).timestamp() * 1000)
    first, second = uniq_keys(now_ms=now_ms).next_many(2)
    assert first[:8] == "0A010203" and first[8:12] == "1234"
    assert int(first[20:28], 16) == now_ms - month_ms
    assert int(second[28:], 16) == (int(first[28:], 16) + 1) & 0xFFFF
    assert uniq_keys(now_ms=now_ms).next_many(2) == [first, second]


def test_reserved_ids_are_the_ids_next_many_would_give_and_the_counter_moves_past_them() -> None:
    """`reserve` (ids written column-wise by the caller) and `next_many` draw from one
    counter: the same inputs give the same ids either way, across the counter's wrap."""
    a, b = uniq_keys(), uniq_keys()
    for n in (1, 3, 70_000):
        head, first = a.reserve(n)
        assert [f"{head}{(first + i) & 0xFFFF:04X}" for i in range(n)] == b.next_many(n)
    assert a.next_many(2) == b.next_many(2)
    assert [a.next() for _ in range(3)] == b.next_many(3)


def test_ids_take_addresses_not_names() -> None:
    assert offset_msg_id("localhost", 1, 2) == offset_msg_id("127.0.0.1", 1, 2)
    with pytest.raises(ValueError, match="resolve"):
        offset_msg_id("broker.example", 10911, 0)
    with pytest.raises(ValueError, match="resolve"):
        uniq_keys("client.example")


# --------------------------------------------------------------------------- tags


@pytest.mark.parametrize(
    ("tag", "code"),
    [("TagA", 2598919), ("TagB", 2598920), ("*", 42), ("中文", 646394), ("", 0)],
)
def test_tag_hash_known_values(tag: str, code: int) -> None:
    assert java_string_hash(tag) == code


def _reference_hash(text: str) -> int:
    units = struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be"))
    h = sum(u * pow(31, len(units) - 1 - i, 2**32) for i, u in enumerate(units)) % 2**32
    return h - 2**32 if h >= 2**31 else h


@given(st.text(max_size=50))
def test_tag_hash_is_java_string_hash_over_utf16(text: str) -> None:
    assert java_string_hash(text) == _reference_hash(text)


def test_tag_expressions() -> None:
    expr = TagExpression.parse(" TagA || TagB ||")
    assert expr.tags == {"TagA", "TagB"} and expr.codes == {2598919, 2598920}
    assert expr.matches_code(2598919) and not expr.matches_code(0)
    assert expr.matches_tag("TagB") and not expr.matches_tag(None)
    everything = TagExpression.parse("*")
    assert everything.matches_all and everything.matches_code(0) and everything.matches_tag(None)
    assert tags_code(None) == 0 and tags_code("TagA") == 2598919


# --------------------------------------------------------------------------- compression, flags


@settings(max_examples=50, deadline=None)
@given(body=st.binary(max_size=3 * COMPRESS_OVER) | st.just(b"a" * COMPRESS_OVER))
def test_compression_round_trips_from_the_threshold(body: bytes) -> None:
    stored, flag = maybe_compress(body, MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    assert bool(flag & MessageSysFlag.COMPRESSED) == (len(body) >= COMPRESS_OVER)
    assert flag & MessageSysFlag.TRANSACTION_PREPARED_TYPE
    assert decompress_body(stored, flag) == body
    # Java >= 4.9.4 also marks the compression type ZLIB (0x300).
    assert decompress_body(stored, flag | MessageSysFlag.COMPRESSION_ZLIB) == body


def test_unsupported_or_corrupt_compression_is_the_peers_fault() -> None:
    flag = MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_LZ4
    with pytest.raises(ProtocolError, match="unsupported"):
        decompress_body(b"x", flag)
    with pytest.raises(ProtocolError, match="corrupt"):
        decompress_body(b"not zlib", MessageSysFlag.COMPRESSED)


def test_sys_flags() -> None:
    assert PullSysFlag.build(commit_offset=False, suspend=True, subscription=False) == 2
    assert PullSysFlag.build(commit_offset=True, suspend=True, subscription=True) == 7
    lite = PullSysFlag.build(commit_offset=False, suspend=True, subscription=True, lite_pull=True)
    assert lite == 22
    assert MessageSysFlag.transaction_type(0x4 | 0x1) == MessageSysFlag.TRANSACTION_PREPARED_TYPE
    assert MessageSysFlag.is_consumable_transaction_type(0x8)
    assert not MessageSysFlag.is_consumable_transaction_type(0x4)
    assert not MessageSysFlag.is_consumable_transaction_type(0xC)
    assert MessageSysFlag.clear_transaction(0xD) == 0x1
