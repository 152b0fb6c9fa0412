"""REGISTER_BROKER's compressed body (header `compressed=true`, RocketMQ's `compressedRegister`).

A broker with 100,000 topics would send ~15 MB of JSON, near the 16 MiB frame limit; RocketMQ's
compact form (`RegisterBrokerBody.encode(true)` / `decode(data, true)`) is a zlib stream of

    int32 length + DataVersion JSON
    int32 topic count, then per topic: int32 length + "<name> <read> <write> <perm> <filterType>"
    int32 length + filter-server list JSON

(big-endian lengths, UTF-8 text; a topic's line is `TopicConfig.encode`, so topicSysFlag and
order are not carried, as in RocketMQ).  About 3 bytes a topic compressed instead of ~150.
"""

from __future__ import annotations

import struct
import zlib

from longboat.protocol import fastjson
from longboat.protocol.bodies import (
    TOPIC_FILTER_TYPES,
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
)
from longboat.protocol.errors import ProtocolError

_INT = struct.Struct(">i")
# Past this many topics a broker sends the compressed form: the JSON one (~150 bytes a topic)
# would near the frame limit at 100,000 topics, and the compressed one does not carry
# topicSysFlag and order, so small tables keep JSON.
COMPRESS_OVER_TOPICS = 1000
# A compressed body inflating past this is refused: the JSON form of the same table must fit
# a frame, and its compact form is several times smaller.
MAX_INFLATED = 64 * 1024 * 1024


def encode_register_body(table: dict[str, TopicConfig], version: DataVersion) -> tuple[bytes, bool]:
    """REGISTER_BROKER's body for a table, and whether it is the compressed form (the
    header's `compressed`): JSON up to COMPRESS_OVER_TOPICS topics, compressed past."""
    body = RegisterBrokerBody(table, version)
    if len(table) > COMPRESS_OVER_TOPICS:
        return encode_compressed(body), True
    return body.to_json(), False


def encode_compressed(body: RegisterBrokerBody, level: int = 6) -> bytes:
    """The compact form, deflated (any zlib level decodes the same; RocketMQ uses 9)."""
    parts = [_sized(fastjson.dumps(body.data_version.to_dict()))]
    parts.append(_INT.pack(len(body.topic_config_table)))
    for config in body.topic_config_table.values():
        line = (
            f"{config.topic_name} {config.read_queue_nums} {config.write_queue_nums} "
            f"{config.perm} {config.topic_filter_type}"
        )
        parts.append(_sized(line.encode()))
    parts.append(_sized(fastjson.dumps(body.filter_server_list)))
    return zlib.compress(b"".join(parts), level)


def decode_compressed(data: bytes) -> RegisterBrokerBody:
    """Raises ProtocolError for anything but a whole, well-formed compact body."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_INFLATED)
    except zlib.error as exc:
        raise ProtocolError(f"bad compressed register body: {exc}") from None
    if inflater.unconsumed_tail:
        raise ProtocolError(f"compressed register body inflates past {MAX_INFLATED} bytes")
    reader = _Reader(raw)
    try:
        version = DataVersion.from_dict(fastjson.loads(reader.sized()))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f"bad data version in a compressed register body: {exc}") from None
    table: dict[str, TopicConfig] = {}
    for _ in range(reader.length()):
        config = _topic_config(reader.sized().decode("utf-8", "replace"))
        table[config.topic_name] = config
    servers = fastjson.loads(reader.sized())
    if not isinstance(servers, list):
        raise ProtocolError("bad compressed register body: the filter-server list is not a list")
    return RegisterBrokerBody(table, version, [str(s) for s in servers])


def _sized(payload: bytes) -> bytes:
    return _INT.pack(len(payload)) + payload


def _topic_config(line: str) -> TopicConfig:
    fields = line.split(" ")
    if len(fields) != 5 or fields[4] not in TOPIC_FILTER_TYPES:
        raise ProtocolError(f"bad topic config in a compressed register body: {line[:200]!r}")
    name, read, write, perm, filter_type = fields
    try:
        return TopicConfig(name, int(read), int(write), int(perm), filter_type)
    except ValueError:
        raise ProtocolError(f"bad topic config in a compressed register body: {line!r}") from None


class _Reader:
    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def length(self) -> int:
        value: int = _INT.unpack(self._take(4))[0]
        if value < 0:
            raise ProtocolError(f"bad compressed register body: negative length {value}")
        return value

    def sized(self) -> bytes:
        return self._take(self.length())

    def _take(self, size: int) -> bytes:
        end = self._pos + size
        if end > len(self._data):
            raise ProtocolError("compressed register body ends early")
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk
