"""Frames and both header serializations: the reference's worked example byte for byte, the
dialects real peers write, answering in the request's type, and round trips of any command."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol import (
    FrameDecoder,
    FrameTooLarge,
    HeaderFieldError,
    LanguageCode,
    ProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    encode_frame,
    encode_parts,
)
from longboat.protocol.header_codec import decode_json_header
from longboat.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2

# remoting.md §1.2: GET_ROUTEINFO_BY_TOPIC for topic "T", opaque 7, from a Java 4.9.8 peer.
WORKED_JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":409}'
)
WORKED_ROCKETMQ_FRAME = bytes.fromhex(
    "00000025 01000021 0069 00 0199 00000007 00000000 00000000 0000000c 0005 746f706963 00000001 54"
)


def _worked_request(serialize_type: SerializeType) -> RemotingCommand:
    return RemotingCommand(
        code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
        opaque=7,
        language=LanguageCode.JAVA,
        version=409,
        ext_fields={"topic": "T"},
        serialize_type=serialize_type,
    )


def _decode_all(data: bytes, max_frame: int | None = None) -> list[RemotingCommand]:
    decoder = FrameDecoder() if max_frame is None else FrameDecoder(max_frame)
    decoder.feed(data)
    cmds = decoder.commands()
    assert decoder.buffered == 0
    return cmds


# --------------------------------------------------------------------------- worked example


def test_worked_example_json_frame_byte_for_byte() -> None:
    assert len(WORKED_JSON_HEADER) == 123
    frame = bytes.fromhex("0000007f 0000007b") + WORKED_JSON_HEADER
    assert len(frame) == 131
    assert encode_frame(_worked_request(SerializeType.JSON)) == frame
    assert _decode_all(frame) == [_worked_request(SerializeType.JSON)]


def test_worked_example_rocketmq_frame_byte_for_byte() -> None:
    assert encode_frame(_worked_request(SerializeType.ROCKETMQ)) == WORKED_ROCKETMQ_FRAME
    assert _decode_all(WORKED_ROCKETMQ_FRAME) == [_worked_request(SerializeType.ROCKETMQ)]


def test_rocketmq_header_with_remark_and_several_ext_fields() -> None:
    cmd = RemotingCommand(
        code=ResponseCode.SYSTEM_ERROR,
        opaque=-5,
        flag=1,
        language=LanguageCode.GO,
        version=-1,
        remark="the custom field <topic> is null — 中文",
        ext_fields={"a": "1", "": "empty key", "k": "", "ü": "v" * 300},
        body=b"\x00\x01\x02",
        serialize_type=SerializeType.ROCKETMQ,
    )
    assert _decode_all(encode_frame(cmd)) == [cmd]


def test_rocketmq_empty_remark_reads_back_as_none_as_in_java() -> None:
    cmd = _worked_request(SerializeType.ROCKETMQ)
    cmd.remark = ""
    (back,) = _decode_all(encode_frame(cmd))
    assert back.remark is None


def test_encode_parts_keeps_the_body_separate() -> None:
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "g"}, body=b"x" * 1000)
    head, body = encode_parts(cmd)
    assert body is cmd.body
    assert head + body == encode_frame(cmd)


# --------------------------------------------------------------------------- responses


@pytest.mark.parametrize("serialize_type", list(SerializeType))
def test_answer_in_the_type_the_request_used(serialize_type: SerializeType) -> None:
    (request,) = _decode_all(encode_frame(_worked_request(serialize_type)))
    response = request.make_response(ResponseCode.TOPIC_NOT_EXIST, remark="no route")
    frame = encode_frame(response)
    assert frame[4] == serialize_type
    (back,) = _decode_all(frame)
    assert back.is_response and not back.is_oneway
    assert back.opaque == 7
    assert back.code == ResponseCode.TOPIC_NOT_EXIST
    assert back.remark == "no route"
    assert back.serialize_type == serialize_type


def test_oneway_requests_carry_flag_bit_1() -> None:
    cmd = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True, opaque=3)
    (back,) = _decode_all(encode_frame(cmd))
    assert back.flag == 2 and back.is_oneway and not back.is_response


def test_json_header_written_with_string_ext_values_and_sorted_top_keys() -> None:
    header = orjson.loads(encode_frame(_worked_request(SerializeType.JSON))[8:])
    assert list(header) == sorted(header)
    cmd = RemotingCommand(code=0, flag=1)
    header = orjson.loads(encode_frame(cmd)[8:])
    assert "extFields" not in header and "remark" not in header


# --------------------------------------------------------------------------- JSON dialects


def _json(header: dict[str, object]) -> RemotingCommand:
    return decode_json_header(orjson.dumps(header))


def test_ali_ons_raw_numbers_and_booleans_become_java_strings() -> None:
    cmd = _json(
        {
            "code": 310,
            "language": "JAVA",
            "opaque": 2,
            "flag": 0,
            "version": 121,
            "extFields": {"d": 4, "e": -1, "g": 1795346267133, "k": False, "m": True, "x": None},
        }
    )
    assert cmd.ext_fields == {"d": "4", "e": "-1", "g": "1795346267133", "k": "false", "m": "true"}


@pytest.mark.parametrize("ext", [{}, {"extFields": None}, {"extFields": {}}])
def test_missing_or_null_ext_fields_read_as_empty(ext: dict[str, object]) -> None:
    assert _json({"code": 34, **ext}).ext_fields == {}


def test_language_by_name_or_ordinal_and_unknown_keys_ignored() -> None:
    cmd = _json({"code": 0, "language": 9, "whatever": [1], "serializeTypeCurrentRPC": "X"})
    assert cmd.language == LanguageCode.GO
    assert _json({"code": 0, "language": "KOTLIN"}).language == LanguageCode.OTHER


@pytest.mark.parametrize(
    "header",
    [
        {"flag": 0},
        {"code": "--5"},
        {"code": "²"},
        {"code": 1.5},
        {"code": True},
        {"code": 0, "opaque": 2**31},
        {"code": 0, "extFields": []},
        {"code": 0, "extFields": {"a": {"b": 1}}},
        {"code": 0, "remark": 5},
    ],
)
def test_malformed_json_headers_are_the_peers_fault(header: dict[str, object]) -> None:
    with pytest.raises(ProtocolError):
        _json(header)


def test_required_typed_field_missing_names_the_field() -> None:
    with pytest.raises(HeaderFieldError) as err:
        PullMessageRequestHeader.from_ext({"consumerGroup": "g", "topic": "T"})
    assert err.value.field == "queueId"
    assert "<queueId>" in str(err.value)
    with pytest.raises(HeaderFieldError, match="cannot be parsed"):
        SendMessageRequestHeaderV2.from_ext(
            {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "x", "f": "0", "g": "1", "h": "0"}
        )


def test_optional_typed_field_that_does_not_parse_is_dropped_like_java() -> None:
    ext = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"}
    h = SendMessageRequestHeaderV2.from_ext({**ext, "j": "not a number", "bname": "b"})
    assert h.reconsumeTimes is None


# --------------------------------------------------------------------------- limits


def test_oversized_length_prefix_refused_before_buffering() -> None:
    decoder = FrameDecoder(max_frame=1024)
    decoder.feed((1020).to_bytes(4, "big"))  # total 1024 bytes: allowed
    assert decoder.next_command() is None
    decoder = FrameDecoder(max_frame=1024)
    decoder.feed(b"\x00\x00")
    with pytest.raises(FrameTooLarge):
        decoder.feed((1021).to_bytes(4, "big")[2:])
    with pytest.raises(FrameTooLarge):
        FrameDecoder().feed(b"\x7f\xff\xff\xff")


def test_an_http_answer_is_named_as_such() -> None:
    with pytest.raises(ProtocolError, match="the peer answered in HTTP") as refused:
        FrameDecoder().feed(b"HTTP/1.1 400 Bad Request\r\n")
    assert not isinstance(refused.value, FrameTooLarge)


def test_oversized_frame_after_a_good_one_is_refused_when_reached() -> None:
    good = encode_frame(_worked_request(SerializeType.JSON))
    decoder = FrameDecoder(max_frame=200)
    decoder.feed(good + (500).to_bytes(4, "big"))
    assert decoder.next_command() == _worked_request(SerializeType.JSON)
    with pytest.raises(FrameTooLarge):
        decoder.next_command()


@pytest.mark.parametrize(
    "frame",
    [
        bytes.fromhex("00000003"),  # shorter than its own type/length word
        bytes.fromhex("00000004 00000005"),  # header longer than the frame
        bytes.fromhex("00000006 02000002 7b7d"),  # unknown serialize type
        bytes.fromhex("00000006 00000002 7b7b"),  # JSON that does not parse
        bytes.fromhex("00000006 00000002 5b5d"),  # JSON that is not an object
        bytes.fromhex("00000008 01000004 00000000"),  # ROCKETMQ header below 21 bytes
    ],
)
def test_malformed_frames_raise_protocol_error(frame: bytes) -> None:
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError):
        decoder.feed(frame)
        decoder.commands()


# --------------------------------------------------------------------------- properties

_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT16 = st.integers(-(2**15), 2**15 - 1)
_TEXT = st.text(max_size=40)
_EXT = st.dictionaries(_TEXT, _TEXT, max_size=8)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    stype = draw(st.sampled_from(SerializeType))
    rocketmq = stype == SerializeType.ROCKETMQ
    return RemotingCommand(
        code=draw(_INT16 if rocketmq else _INT32),
        opaque=draw(_INT32),
        flag=draw(st.sampled_from([0, 1, 2]) | _INT32),
        language=draw(st.sampled_from(LanguageCode)),
        version=draw(_INT16 if rocketmq else _INT32),
        # Java's ROCKETMQ reader turns an empty string into null; JSON keeps "".
        remark=draw(st.none() | (st.text(min_size=1, max_size=60) if rocketmq else _TEXT)),
        ext_fields=draw(_EXT),
        body=draw(st.binary(max_size=300)),
        serialize_type=stype,
    )


@settings(max_examples=300, deadline=None)
@given(cmds=st.lists(commands(), min_size=1, max_size=5), data=st.data())
def test_any_commands_round_trip_through_any_chunking(
    cmds: list[RemotingCommand], data: st.DataObject
) -> None:
    stream = b"".join(encode_frame(c) for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        decoder.feed(stream[start:cut])
        got += decoder.commands()
        start = cut
    assert got == cmds
    assert decoder.buffered == 0


@settings(max_examples=20, deadline=None)
@given(reads=st.lists(st.integers(1, 300_000), min_size=1, max_size=40), data=st.data())
def test_a_large_body_spread_over_many_reads_arrives_intact(
    reads: list[int], data: st.DataObject
) -> None:
    """A pull answer of a megabyte, cut into reads of any sizes, with a small frame after it
    in the same stream: both arrive whole, byte for byte, and nothing stays buffered."""
    body = data.draw(st.binary(min_size=64, max_size=64)) * (1 << 14)
    big = RemotingCommand(code=ResponseCode.SUCCESS, flag=1, opaque=5, body=body)
    small = _worked_request(SerializeType.JSON)
    stream = encode_frame(big) + encode_frame(small)
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    start = 0
    for size in [*reads, len(stream)]:
        decoder.feed(stream[start : start + size])
        got += decoder.commands()
        start += size
        if start >= len(stream):
            break
    assert got == [big, small]
    assert decoder.buffered == 0
