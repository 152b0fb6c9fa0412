"""REGISTER_BROKER's compressed body (RocketMQ's `compressedRegister` form): round trip, the
exact layout RocketMQ's RegisterBrokerBody.decode(data, true) reads, and refusals of bad input."""

from __future__ import annotations

import struct
import zlib

import pytest

from longboat.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from longboat.protocol.errors import ProtocolError
from longboat.protocol.register_body import decode_compressed, encode_compressed


def sized(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw


def test_the_layout_is_rocketmqs() -> None:
    """Built by hand as RocketMQ's encode(true) writes it (Deflater BEST_COMPRESSION)."""
    raw = (
        sized('{"counter":7,"timestamp":1700000000000}')
        + struct.pack(">i", 2)
        + sized("TopicA 8 8 6 SINGLE_TAG")
        + sized("%RETRY%g 1 1 6 MULTI_TAG")
        + sized("[]")
    )
    body = decode_compressed(zlib.compress(raw, 9))
    assert body.data_version == DataVersion(1_700_000_000_000, 7)
    assert body.topic_config_table == {
        "TopicA": TopicConfig("TopicA", 8, 8, 6, "SINGLE_TAG"),
        "%RETRY%g": TopicConfig("%RETRY%g", 1, 1, 6, "MULTI_TAG"),
    }
    assert body.filter_server_list == []
    assert zlib.decompress(encode_compressed(body)) == raw


def test_100000_topics_round_trip_far_below_the_frame_limit() -> None:
    table = {f"Topic-{i}": TopicConfig(f"Topic-{i}", 8, 8, 6) for i in range(100_000)}
    body = RegisterBrokerBody(table, DataVersion(1, 100_000))
    encoded = encode_compressed(body)
    assert len(encoded) < 2 * 1024 * 1024 < len(body.to_json())
    decoded = decode_compressed(encoded)
    assert decoded == body
    # Each decoded topic does not carry a filter-type string of its own.
    assert len({id(c.topic_filter_type) for c in decoded.topic_config_table.values()}) == 1


@pytest.mark.parametrize(
    "raw",
    [
        b"not zlib at all",
        zlib.compress(sized("{}")),  # ends before the topic count
        zlib.compress(sized("{}") + struct.pack(">i", 1) + sized("T 8 8") + sized("[]")),
        zlib.compress(sized("{}") + struct.pack(">i", 1) + sized("T x 8 6 SINGLE_TAG")),
        zlib.compress(sized("[1]") + struct.pack(">i", 0) + sized("[]")),
        zlib.compress(struct.pack(">i", -5)),
    ],
)
def test_a_bad_body_is_a_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_compressed(raw)
