"""The stored / pulled message record, byte for byte as RocketMQ 4.x lays it out.

One layout serves three places: the commit log stores it, pull / query / view responses carry
it unchanged, and clients decode it.  So the broker never re-encodes on the read path.

    TOTALSIZE 4 | MAGIC 4 | BODYCRC 4 | QUEUEID 4 | FLAG 4 | QUEUEOFFSET 8 | PHYSICALOFFSET 8 |
    SYSFLAG 4 | BORNTIMESTAMP 8 | BORNHOST 8 (20 if V6) | STORETIMESTAMP 8 |
    STOREHOST 8 (20 if V6) | RECONSUMETIMES 4 | PREPARED_TRANSACTION_OFFSET 8 |
    BODYLEN 4 + BODY | TOPICLEN 1 (2 for magic V2) + TOPIC | PROPLEN 2 + PROPERTIES
"""

from __future__ import annotations

import ipaddress
import mmap
import struct
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from longboat.protocol.compression import decompress_body
from longboat.protocol.errors import ProtocolError
from longboat.protocol.ids import offset_msg_id_from_bytes
from longboat.protocol.properties import (
    KEY_SEPARATOR,
    Prop,
    properties_to_string,
    string_to_properties,
)
from longboat.protocol.sysflags import MessageSysFlag

MAGIC_V1 = -626843481  # 0xDAA320A7
MAGIC_V2 = -626843477  # 0xDAA320AB, 5.x: 2-byte topic length
BLANK_MAGIC = -875286124  # 0xCBD43194, end-of-segment filler in commit-log files

MAX_TOPIC_BYTES_V1 = 127
MAX_PROPERTIES_BYTES = 32767

# Field offsets of the fixed part (IPv4 born host), used by the store to patch records.
POS_TOTALSIZE = 0
POS_MAGIC = 4
POS_BODYCRC = 8
POS_QUEUEID = 12
POS_FLAG = 16
POS_QUEUEOFFSET = 20
POS_PHYSICALOFFSET = 28
POS_SYSFLAG = 36
POS_BORNTIMESTAMP = 40
POS_BORNHOST = 48
# Further positions when both hosts are IPv4 (no *_V6 sys flag): what every 4.x peer sends.
POS_STORETIMESTAMP_V4 = 56
POS_STOREHOST_V4 = 64
POS_RECONSUMETIMES_V4 = 72
POS_BODYLEN_V4 = 84
POS_BODY_V4 = 88

_HEAD = struct.Struct(">iiiiiqqiq")  # size .. borntimestamp (48 bytes)
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
_HOST4 = struct.Struct(">4si")
_HOST6 = struct.Struct(">16si")
_TAIL_FIXED = struct.Struct(">iqi")  # reconsumetimes, prepared offset, body length
# The whole fixed part up to the body length, both hosts IPv4.
_FIXED_V4 = struct.Struct(">iiiiiqqiq4siq4siiqi")
_FIXED_V4_SIZE = _FIXED_V4.size
_V6_FLAGS = MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOSTADDRESS_V6


def body_crc(body: bytes) -> int:
    """CRC32 of the stored body, masked to a positive int as Java's UtilAll.crc32 does."""
    return zlib.crc32(body) & 0x7FFFFFFF


def _pack_host(host: bytes, port: int) -> bytes:
    return (_HOST4 if len(host) == 4 else _HOST6).pack(host, port)


def _host_str(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


@dataclass(slots=True)
class MessageExt:
    """A message as stored and delivered, with everything the record carries."""

    topic: str
    body: bytes
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = b"\x7f\x00\x00\x01"
    born_port: int = 0
    store_timestamp: int = 0
    store_host: bytes = b"\x7f\x00\x00\x01"
    store_port: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    body_crc: int = 0
    store_size: int = 0

    @property
    def tags(self) -> str | None:
        return self.properties.get(Prop.TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(Prop.KEYS)

    @property
    def key_list(self) -> list[str]:
        keys = self.properties.get(Prop.KEYS)
        return [k for k in keys.split(KEY_SEPARATOR) if k] if keys else []

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(Prop.UNIQ_KEY)

    @property
    def offset_msg_id(self) -> str:
        return offset_msg_id_from_bytes(self.store_host, self.store_port, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """The producer's unique id when it set one, else the offset id (as Java reports)."""
        return self.properties.get(Prop.UNIQ_KEY) or self.offset_msg_id

    @property
    def born_host_str(self) -> str:
        return f"{_host_str(self.born_host)}:{self.born_port}"

    @property
    def store_host_str(self) -> str:
        return f"{_host_str(self.store_host)}:{self.store_port}"

    def header_fields(self) -> dict[str, object]:
        """Where and when the message was stored, its ids, tags and keys, under the names
        RocketMQ's tools use: the part of a message record (CLI JSON, dashboard) that is
        neither its properties nor its body."""
        return {
            "topic": self.topic,
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "msgId": self.msg_id,
            "offsetMsgId": self.offset_msg_id,
            "tags": self.tags,
            "keys": self.key_list,
            "bornTimestamp": self.born_timestamp,
            "storeTimestamp": self.store_timestamp,
            "bornHost": self.born_host_str,
            "storeHost": self.store_host_str,
            "reconsumeTimes": self.reconsume_times,
        }


def encode_record(
    *,
    topic: bytes,
    body: bytes,
    properties: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    commit_log_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    born_port: int,
    store_timestamp: int,
    store_host: bytes,
    store_port: int,
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    crc: int | None = None,
) -> bytes:
    """One record.  `topic` and `properties` are already UTF-8; host fields follow sys_flag."""
    if len(topic) > MAX_TOPIC_BYTES_V1:
        raise ValueError(f"topic of {len(topic)} bytes exceeds {MAX_TOPIC_BYTES_V1}")
    if len(properties) > MAX_PROPERTIES_BYTES:
        raise ValueError(f"properties of {len(properties)} bytes exceed {MAX_PROPERTIES_BYTES}")
    if len(born_host) == 16:
        sys_flag |= MessageSysFlag.BORNHOST_V6
    else:
        sys_flag &= ~MessageSysFlag.BORNHOST_V6
    if len(store_host) == 16:
        sys_flag |= MessageSysFlag.STOREHOSTADDRESS_V6
    else:
        sys_flag &= ~MessageSysFlag.STOREHOSTADDRESS_V6
    size = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + (len(born_host) + 4) + 8 + (len(store_host) + 4)
    size += 4 + 8 + 4 + len(body) + 1 + len(topic) + 2 + len(properties)
    return b"".join(
        (
            _HEAD.pack(
                size,
                MAGIC_V1,
                body_crc(body) if crc is None else crc,
                queue_id,
                flag,
                queue_offset,
                commit_log_offset,
                sys_flag,
                born_timestamp,
            ),
            _pack_host(born_host, born_port),
            _I64.pack(store_timestamp),
            _pack_host(store_host, store_port),
            _TAIL_FIXED.pack(reconsume_times, prepared_transaction_offset, len(body)),
            body,
            bytes((len(topic),)),
            topic,
            _I16.pack(len(properties)),
            properties,
        )
    )


# One message of `encode_record_batch`: body, properties (UTF-8), flag.
RecordParts = tuple[bytes, bytes, int]
# What a record says of its sender: sys_flag, born timestamp, born host, born port, reconsume
# times, prepared transaction offset.  A batch's messages share one (the request's).
RecordSender = tuple[int, int, bytes, int, int, int]

# From SYSFLAG to PREPARED_TRANSACTION_OFFSET, by the lengths of the born and store hosts.
_MIDDLES = {
    (born, store): struct.Struct(f">iq{born}siq{store}siiq")
    for born in (4, 16)
    for store in (4, 16)
}
# The fixed part around it: TOTALSIZE .. PHYSICALOFFSET, the middle as bytes, BODYLEN.
_HEADS = {middle.size: struct.Struct(f">iiiiiqq{middle.size}si") for middle in _MIDDLES.values()}
_HEAD_AROUND_MIDDLE = 36 + 4


def encode_record_batch(
    *,
    topic: bytes,
    queue_id: int,
    commit_log_offset: int,
    store_timestamp: int,
    store_host: bytes,
    store_port: int,
    messages: list[RecordParts],
    senders: RecordSender | list[RecordSender],
    queue_offsets: list[int],
) -> tuple[bytes, list[int]]:
    """Records for consecutive commit-log offsets from `commit_log_offset`, back to back, and
    their sizes: the same bytes as `encode_record` per message, at a fraction of the cost.

    The store's append path, one call per batch.  `senders` is one `RecordSender` for the
    whole batch (a SEND_BATCH_MESSAGE, a plain send) or one per message; what lies between
    the physical offset and the body length is the same for every message of one sender, so
    it is packed once per sender and each record packs nine fields around it, not seventeen.
    """
    if len(topic) > MAX_TOPIC_BYTES_V1:
        raise ValueError(f"topic of {len(topic)} bytes exceeds {MAX_TOPIC_BYTES_V1}")
    if len(queue_offsets) != len(messages):
        raise ValueError(f"{len(messages)} messages, {len(queue_offsets)} queue offsets")
    middles: Iterable[bytes]
    packs: Iterable[Callable[..., bytes]]
    if isinstance(senders, tuple):
        middle = _record_middle(senders, store_timestamp, store_host, store_port)
        middles = repeat(middle)
        packs = repeat(_HEADS[len(middle)].pack)
    else:
        if len(senders) != len(messages):
            raise ValueError(f"{len(messages)} messages, {len(senders)} senders")
        middles = [_record_middle(s, store_timestamp, store_host, store_port) for s in senders]
        packs = [_HEADS[len(m)].pack for m in middles]
    parts: list[bytes] = []
    sizes: list[int] = []
    crc32 = zlib.crc32
    topic_part = bytes((len(topic),)) + topic
    fixed = _HEAD_AROUND_MIDDLE + len(topic_part) + 2
    # The topic and the properties' length, between body and properties, by that length: a
    # batch's messages mostly share a few, so a record is one part and one struct call less.
    tails: dict[int, bytes] = {}
    phys = commit_log_offset
    # Lengths checked above (`repeat` never ends, so zip cannot be strict here).
    for (body, props, flag), middle, pack, qoff in zip(  # noqa: B905
        messages, middles, packs, queue_offsets
    ):
        body_len = len(body)
        props_len = len(props)
        tail = tails.get(props_len)
        if tail is None:
            if props_len > MAX_PROPERTIES_BYTES:
                raise ValueError(f"properties of {props_len} bytes exceed {MAX_PROPERTIES_BYTES}")
            tail = tails[props_len] = topic_part + _I16.pack(props_len)
        size = fixed + len(middle) + body_len + props_len
        parts += (
            pack(size, MAGIC_V1, crc32(body) & 0x7FFFFFFF, queue_id, flag, qoff, phys, middle,
                 body_len),
            body,
            tail,
            props,
        )  # fmt: skip
        sizes.append(size)
        phys += size
    return b"".join(parts), sizes


def _record_middle(
    sender: RecordSender, store_timestamp: int, store_host: bytes, store_port: int
) -> bytes:
    """SYSFLAG .. PREPARED_TRANSACTION_OFFSET, the host flags set as the hosts' lengths say."""
    sys_flag, born_timestamp, born_host, born_port, reconsume, prepared = sender
    sys_flag &= ~_V6_FLAGS
    if len(born_host) == 16:
        sys_flag |= MessageSysFlag.BORNHOST_V6
    if len(store_host) == 16:
        sys_flag |= MessageSysFlag.STOREHOSTADDRESS_V6
    return _MIDDLES[len(born_host), len(store_host)].pack(
        sys_flag, born_timestamp, born_host, born_port, store_timestamp, store_host, store_port,
        reconsume, prepared,
    )  # fmt: skip


def encode_message(msg: MessageExt) -> bytes:
    return encode_record(
        topic=msg.topic.encode("utf-8"),
        body=msg.body,
        properties=properties_to_string(msg.properties).encode("utf-8"),
        queue_id=msg.queue_id,
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        born_port=msg.born_port,
        store_timestamp=msg.store_timestamp,
        store_host=msg.store_host,
        store_port=msg.store_port,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
    )


def decode_record(
    data: bytes | bytearray | memoryview | mmap.mmap, pos: int = 0, *, decompress: bool = False
) -> MessageExt:
    """The record starting at `pos`.  Raises ProtocolError when it is not a whole, valid record."""
    if type(data) is bytes:
        return _decode_record(data, pos, decompress)
    with memoryview(data) as view:
        return _decode_record(view, pos, decompress)


def _decode_record(buf: bytes | memoryview, pos: int, decompress: bool) -> MessageExt:
    # One unpack covers the fixed part when both hosts are IPv4 (what every 4.x peer sends);
    # records with an IPv6 host take the field-by-field path.
    try:
        try:
            (size, magic, crc, queue_id, flag, qoff, phys, sys_flag, born_ts, born_host,
             born_port, store_ts, store_host, store_port, reconsume, prepared,
             body_len) = _FIXED_V4.unpack_from(buf, pos)  # fmt: skip
            p = pos + _FIXED_V4_SIZE
        except struct.error:
            size, magic, _, _, _, _, _, sys_flag, _ = _HEAD.unpack_from(buf, pos)
            if not sys_flag & _V6_FLAGS:
                raise
        if magic != MAGIC_V1 and magic != MAGIC_V2:
            raise ProtocolError(f"bad message magic 0x{magic & 0xFFFFFFFF:08X} at {pos}")
        end = pos + size
        if size < 91 or end > len(buf):
            raise ProtocolError(f"message size {size} at {pos} does not fit the buffer")
        if sys_flag & _V6_FLAGS:
            (size, magic, crc, queue_id, flag, qoff, phys, sys_flag, born_ts, born_host,
             born_port, store_ts, store_host, store_port, reconsume, prepared, body_len,
             p) = _unpack_fixed_any_host(buf, pos)  # fmt: skip
        if body_len < 0 or p + body_len > end:
            raise ProtocolError(f"body length {body_len} overruns the record at {pos}")
        body = buf[p : p + body_len]
        if type(body) is not bytes:
            body = bytes(body)
        p += body_len
        if p >= end:
            raise ProtocolError(f"topic length missing from the record at {pos}")
        if magic == MAGIC_V1:
            topic_len = buf[p]
            if topic_len > 127:
                raise ProtocolError(f"negative topic length at {pos}")
            p += 1
        else:
            (topic_len,) = _I16.unpack_from(buf, p)
            p += 2
        if topic_len < 0 or p + topic_len > end:
            raise ProtocolError(f"topic overruns the record at {pos}")
        topic = str(buf[p : p + topic_len], "utf-8")
        p += topic_len
        (props_len,) = _I16.unpack_from(buf, p)
        p += 2
        if props_len < 0 or p + props_len != end:
            raise ProtocolError(f"properties do not end the record at {pos}")
        props = string_to_properties(str(buf[p:end], "utf-8")) if props_len else {}
    except struct.error:
        raise ProtocolError(f"truncated message record at {pos}") from None
    except UnicodeDecodeError:
        raise ProtocolError(f"message record at {pos} has non-UTF-8 text") from None
    if decompress and sys_flag & MessageSysFlag.COMPRESSED:
        body = decompress_body(body, sys_flag)
    # Positional, in the fields' order: CPython binds 18 keywords by name on every call, on a
    # path taken per message delivered.  tests/protocol/test_codecs.py round-trips every field.
    return MessageExt(
        topic, body, queue_id, flag, qoff, phys, sys_flag, born_ts, born_host, born_port,
        store_ts, store_host, store_port, reconsume, prepared, props, crc, size,
    )  # fmt: skip


def _unpack_fixed_any_host(buf: bytes | memoryview, pos: int) -> tuple[Any, ...]:
    """The fixed part field by field, hosts 4 or 16 bytes as the sys flag says."""
    size, magic, crc, queue_id, flag, qoff, phys, sys_flag, born_ts = _HEAD.unpack_from(buf, pos)
    p = pos + _HEAD.size
    hfmt = _HOST6 if sys_flag & MessageSysFlag.BORNHOST_V6 else _HOST4
    born_host, born_port = hfmt.unpack_from(buf, p)
    p += hfmt.size
    (store_ts,) = _I64.unpack_from(buf, p)
    p += 8
    hfmt = _HOST6 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6 else _HOST4
    store_host, store_port = hfmt.unpack_from(buf, p)
    p += hfmt.size
    reconsume, prepared, body_len = _TAIL_FIXED.unpack_from(buf, p)
    p += _TAIL_FIXED.size
    return (size, magic, crc, queue_id, flag, qoff, phys, sys_flag, born_ts, born_host,
            born_port, store_ts, store_host, store_port, reconsume, prepared, body_len,
            p)  # fmt: skip


def decode_records(
    data: bytes | bytearray | memoryview, *, decompress: bool = False
) -> list[MessageExt]:
    """Every record of a pull / query body, back to back with no count prefix."""
    if type(data) is bytes:
        return _decode_all(data, decompress)
    with memoryview(data) as view:
        return _decode_all(view, decompress)


def _decode_all(buf: bytes | memoryview, decompress: bool) -> list[MessageExt]:
    out: list[MessageExt] = []
    pos = 0
    limit = len(buf)
    while pos < limit:
        msg = _decode_record(buf, pos, decompress)
        out.append(msg)
        pos += msg.store_size
    return out
