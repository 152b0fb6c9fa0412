"""Hostile bytes: random and mutated input never makes a decoder raise anything but
ProtocolError, loop forever, or hold more than the frame cap.

A server catches exactly ProtocolError to drop one bad peer and keep serving the others, so any
other exception escaping a decoder would be a crash bug.  Inputs are random bytes, frame-shaped
random bytes, and mutations (flips, inserts, deletions, truncations, splices) of the real
ali-ons frames and records.  Example counts are bounded so the whole file runs in seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longboat.protocol import FrameDecoder, FrameTooLarge, ProtocolError, fastjson
from longboat.protocol.batch import BatchItem, decode_batch, encode_batch
from longboat.protocol.bodies import ClusterInfo, HeartbeatData, RegisterBrokerBody, TopicRouteData
from longboat.protocol.header_codec import decode_json_header, decode_rocketmq_header
from longboat.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from longboat.protocol.message import MessageExt, decode_record, decode_records, encode_message
from longboat.protocol.table_bodies import (
    ConsumeStats,
    LockBatchRequest,
    decode_consumer_id_list,
    decode_lock_batch_response,
    decode_offset_table,
    decode_topic_list,
)

from .vector_data import load_vectors

CAP = 4096  # a small frame cap, so random lengths often land on both sides of it
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRAMES = [v.frame for v in load_vectors()]
JSON_BODIES = [v.body for v in load_vectors() if v.body_json is not None]
RECORD_BODIES = [
    v.body for v in load_vectors() if v.direction == "s2c" and v.decoded and "messages" in v.decoded
]
RECORD_BODIES.append(
    encode_message(
        MessageExt(
            topic="T",
            body=b"b" * 40,
            born_host=bytes(16),
            properties={"TAGS": "TagA", "KEYS": "k"},
            sys_flag=0x1,
        )
    )
)
BATCH_BODY = encode_batch([BatchItem(b"one", {"TAGS": "a"}), BatchItem(b"two" * 10, {}, 3)])
FASTJSON_TEXTS = [
    b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911"},"brokerName":"b",'
    b'"cluster":"c"}],"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6}]}',
    b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42}}',
    b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:'
    b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":99}}}',
]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A real input with a few random edits, or two spliced together."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "splice"]))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and at < len(data):
            data[at] = draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF]))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[at:]
        elif op == "splice":
            other = draw(st.sampled_from(seeds))
            data[at:] = other[draw(st.integers(0, len(other))) :]
    return bytes(data)


@st.composite
def frame_shaped(draw: st.DrawFn) -> bytes:
    """A plausible prefix (length near the cap, type 0/1/other, any header length), noise after."""
    length = draw(st.integers(0, CAP + 8) | st.integers(-(2**31), 2**31 - 1))
    stype = draw(st.sampled_from([0, 1, 2, 0xFF]))
    hlen = draw(st.integers(0, 64) | st.integers(0, 0xFFFFFF))
    rest = draw(st.binary(max_size=200))
    return length.to_bytes(4, "big", signed=True) + bytes([stype]) + hlen.to_bytes(3, "big") + rest


def _only_protocol_errors(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except ProtocolError:
        pass


def _feed_in_chunks(data: bytes, cuts: list[int]) -> None:
    decoder = FrameDecoder(max_frame=CAP)
    start = 0
    try:
        for cut in [*sorted(cuts), len(data)]:
            decoder.feed(data[start:cut])
            start = cut
            # Each call consumes a whole frame or returns None: bounded work per byte.
            for _ in range(len(data) + 1):
                if decoder.next_command() is None:
                    break
            else:
                pytest.fail("decoder kept returning commands from a finite input")
            assert decoder.buffered <= CAP
    except ProtocolError:
        pass


# --------------------------------------------------------------------------- frames


@FUZZ
@given(
    data=st.binary(max_size=600) | frame_shaped() | mutated(FRAMES),
    cuts=st.lists(st.integers(0, 700), max_size=8),
)
def test_frame_decoder_survives_hostile_bytes(data: bytes, cuts: list[int]) -> None:
    _feed_in_chunks(data, [c for c in cuts if c <= len(data)])


@FUZZ
@given(stream=st.lists(mutated(FRAMES), min_size=2, max_size=4).map(b"".join))
def test_frame_decoder_survives_a_stream_of_mutated_frames(stream: bytes) -> None:
    _feed_in_chunks(stream, list(range(0, len(stream), 97)))


@settings(max_examples=200, deadline=None)
@given(length=st.integers(CAP - 3, 2**31 - 1), tail=st.binary(max_size=16))
def test_oversized_length_prefix_raises_frame_too_large_at_once(length: int, tail: bytes) -> None:
    decoder = FrameDecoder(max_frame=CAP)
    with pytest.raises(FrameTooLarge):
        decoder.feed(length.to_bytes(4, "big") + tail)


@settings(max_examples=200, deadline=None)
@given(length=st.integers(4, CAP - 4), chunk=st.integers(1, 512))
def test_a_frame_under_the_cap_is_buffered_whole_and_no_more(length: int, chunk: int) -> None:
    # A legal-length frame whose bytes trickle in: held until complete, never beyond the cap.
    frame = length.to_bytes(4, "big") + b"\x00\x00\x00\x02{}" + bytes(max(0, length - 6))
    frame = frame[: 4 + length]
    decoder = FrameDecoder(max_frame=CAP)
    try:
        for i in range(0, len(frame), chunk):
            decoder.feed(frame[i : i + chunk])
            assert decoder.buffered <= CAP
            decoder.commands()
    except ProtocolError:
        pass


def test_every_truncation_and_byte_corruption_of_a_real_frame() -> None:
    frame = next(f for f in FRAMES if len(f) < 400)
    for cut in range(len(frame)):
        _feed_in_chunks(frame[:cut], [])
    for at in range(len(frame)):
        for value in (0x00, 0x01, 0x7F, 0xFF):
            corrupted = frame[:at] + bytes([value]) + frame[at + 1 :]
            _feed_in_chunks(corrupted, [])


# --------------------------------------------------------------------------- headers


_JSON_HEADERS = [f[8 : 8 + int.from_bytes(f[5:8], "big")] for f in FRAMES]


@FUZZ
@given(data=st.binary(max_size=300) | mutated(_JSON_HEADERS))
def test_header_decoders_survive_hostile_bytes(data: bytes) -> None:
    _only_protocol_errors(lambda: decode_json_header(data))
    _only_protocol_errors(lambda: decode_rocketmq_header(data))


@FUZZ
@given(
    ext=st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "i", "k", "queueId", "offset"])
        | st.text(max_size=5),
        st.text(max_size=12) | st.integers().map(str),
        max_size=12,
    )
)
def test_typed_headers_reject_only_with_header_field_errors(ext: dict[str, str]) -> None:
    for cls in (SendMessageRequestHeaderV2, PullMessageRequestHeader):
        _only_protocol_errors(partial(cls.from_ext, ext))
    _only_protocol_errors(lambda: ConsumerSendMsgBackRequestHeader.from_ext(ext))


# --------------------------------------------------------------------------- records


@FUZZ
@given(data=st.binary(max_size=400) | mutated(RECORD_BODIES))
def test_record_decoders_survive_hostile_bytes(data: bytes) -> None:
    _only_protocol_errors(lambda: decode_records(data))
    _only_protocol_errors(lambda: decode_records(data, decompress=True))
    _only_protocol_errors(lambda: decode_record(data))


@FUZZ
@given(data=st.binary(max_size=300) | mutated([BATCH_BODY]))
def test_batch_decoder_survives_hostile_bytes(data: bytes) -> None:
    _only_protocol_errors(lambda: decode_batch(data))


# --------------------------------------------------------------------------- JSON bodies

_BODY_READERS: list[Callable[[bytes], Any]] = [
    fastjson.loads,
    TopicRouteData.from_json,
    ClusterInfo.from_json,
    RegisterBrokerBody.from_json,
    HeartbeatData.from_json,
    LockBatchRequest.from_json,
    ConsumeStats.from_json,
    decode_consumer_id_list,
    decode_lock_batch_response,
    decode_topic_list,
    decode_offset_table,
]


@FUZZ
@given(
    data=st.binary(max_size=200)
    | st.text(alphabet='{}[]:,"0123456789-.eEtrufalsn \\', max_size=80).map(str.encode)
    | mutated(JSON_BODIES + FASTJSON_TEXTS)
)
def test_json_body_readers_survive_hostile_bytes(data: bytes) -> None:
    for reader in _BODY_READERS:
        _only_protocol_errors(partial(reader, data))


@pytest.mark.parametrize(
    "text",
    [b"{" * 5000, b"[" * 5000, b"{{" * 3000, b'{"a":' * 3000, b'{{"a":[' * 1000],
)
def test_deep_nesting_is_refused_not_a_recursion_error(text: bytes) -> None:
    for reader in _BODY_READERS:
        with pytest.raises(ProtocolError):
            reader(text)


# --------------------------------------------------------------------------- found by review


def _record_whose_body_ends_the_buffer() -> bytes:
    record = bytearray(encode_message(MessageExt(topic="", body=b"xyz")))
    del record[-3:]  # no topic length byte, no properties length
    record[0:4] = len(record).to_bytes(4, "big")
    return bytes(record)


@pytest.mark.parametrize(
    ("reader", "data"),
    [
        pytest.param(decode_record, _record_whose_body_ends_the_buffer(), id="record-at-end"),
        pytest.param(decode_records, _record_whose_body_ends_the_buffer(), id="records-at-end"),
        pytest.param(TopicRouteData.from_json, b'{"brokerDatas":[1]}', id="route-list-item"),
        pytest.param(
            TopicRouteData.from_json,
            b'{"queueDatas":[{"brokerName":"b","perm":"x"}]}',
            id="route-perm",
        ),
        pytest.param(ClusterInfo.from_json, b'{"brokerAddrTable":{"a":1}}', id="cluster"),
        pytest.param(
            RegisterBrokerBody.from_json,
            b'{"topicConfigSerializeWrapper":{"dataVersion":[]}}',
            id="register-version",
        ),
        pytest.param(
            HeartbeatData.from_json, b'{"clientID":"c","consumerDataSet":["g"]}', id="heartbeat"
        ),
        pytest.param(decode_consumer_id_list, b'{"consumerIdList":5}', id="id-list"),
        pytest.param(
            decode_lock_batch_response, b'{"lockOKMQSet":[{"topic":"T"}]}', id="lock-response"
        ),
        pytest.param(decode_offset_table, b'{"offsetTable":[7]}', id="offset-table"),
        pytest.param(fastjson.loads, b'{{"a":[1]}:1}', id="list-in-object-key"),
        pytest.param(fastjson.loads, b'{{"a":{"b":{}}}:1}', id="object-in-object-key"),
    ],
)
def test_inputs_that_once_escaped_as_other_exceptions(
    reader: Callable[[bytes], Any], data: bytes
) -> None:
    try:
        reader(data)
    except ProtocolError:
        pass
