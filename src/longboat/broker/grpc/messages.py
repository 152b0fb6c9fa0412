"""Messages between the v2 schema and the store: a sent `Message` becomes a `MessageInner`
with RocketMQ's property names, and a stored record becomes the `Message` a consumer gets.

The mapping is RocketMQ 5's (its proxy's message converter), so a message sent over gRPC
reads the same to a 4.x remoting consumer and the other way round:

| v2 system property      | stored as                                           |
|-------------------------|-----------------------------------------------------|
| tag                     | TAGS                                                |
| keys                    | KEYS (space separated)                              |
| message_id              | UNIQ_KEY                                            |
| message_group           | __SHARDINGKEY                                       |
| delivery_timestamp      | TIMER_DELIVER_MS                                    |
| trace_context           | TRACE_CONTEXT                                       |
| born_timestamp/_host    | the record's born timestamp and host                |
| user_properties         | properties of their own names                       |

A delivered message always says `body_encoding` IDENTITY (a compressed 4.x body is inflated
here: the client refuses a message without a known encoding) and carries a CRC32 body digest.
"""

from __future__ import annotations

import ipaddress
import zlib
from typing import Any

from longboat.broker.grpc.schema import pb
from longboat.protocol.compression import decompress_body
from longboat.protocol.ids import host_bytes
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import KEY_SEPARATOR, Prop, holds_separator
from longboat.protocol.sysflags import MessageSysFlag
from longboat.store import MessageInner

# Property names that are RocketMQ's own, never shown as user properties.
SYSTEM_PROPERTIES = frozenset(
    value for name, value in vars(Prop).items() if name.isupper() and isinstance(value, str)
) | {"MSG_REGION", "TRACE_ON", "__transactionId__", "CONSUME_START_TIME"}
_LOOPBACK = b"\x7f\x00\x00\x01"
# Timestamps whose seconds field is this large were sent in milliseconds (a client that
# followed its docstring, see the recorded notes): read them as milliseconds.
_MILLIS_IN_SECONDS = 10**11


class BadMessage(ValueError):
    """A sent message the broker refuses; `code` is the v2 status code to answer."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code


def timestamp_ms(ts: Any) -> int:
    """A protobuf Timestamp as epoch milliseconds (a seconds field in ms is read as ms)."""
    if ts.seconds > _MILLIS_IN_SECONDS:
        return int(ts.seconds)
    return int(ts.seconds * 1000 + ts.nanos // 1_000_000)


def to_inner(msg: Any, queue_id: int, max_body: int) -> MessageInner:
    """The store's message for a sent v2 `Message`; BadMessage names what is wrong."""
    sp = msg.system_properties
    if not msg.body:
        raise BadMessage(pb.Code.MESSAGE_BODY_EMPTY, "the message body is empty")
    if len(msg.body) > max_body:
        raise BadMessage(
            pb.Code.MESSAGE_BODY_TOO_LARGE,
            f"message body of {len(msg.body)} bytes exceeds the limit of {max_body} bytes",
        )
    props: dict[str, str] = {}
    for name, value in msg.user_properties.items():
        if name in SYSTEM_PROPERTIES:
            raise BadMessage(
                pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                f"user property {name!r} is a name RocketMQ reserves for itself",
            )
        if holds_separator(name):
            raise BadMessage(
                pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                f"user property {name!r} holds a separator character (\\x01 or \\x02)",
            )
        if holds_separator(value):
            raise BadMessage(
                pb.Code.BAD_REQUEST,
                f"the value of user property {name!r} holds a separator character (\\x01 or \\x02)",
            )
        props[name] = value
    if sp.HasField("tag"):
        if not sp.tag.strip() or "|" in sp.tag:
            raise BadMessage(pb.Code.ILLEGAL_MESSAGE_TAG, f"illegal message tag {sp.tag!r}")
        props[Prop.TAGS] = sp.tag
    if sp.keys:
        props[Prop.KEYS] = KEY_SEPARATOR.join(sp.keys)
    if sp.message_id:
        props[Prop.UNIQ_KEY] = sp.message_id
    if sp.HasField("message_group"):
        if not sp.message_group:
            raise BadMessage(pb.Code.ILLEGAL_MESSAGE_GROUP, "the message group is empty")
        props[Prop.SHARDING_KEY] = sp.message_group
    if sp.HasField("delivery_timestamp"):
        props[Prop.TIMER_DELIVER_MS] = str(timestamp_ms(sp.delivery_timestamp))
    if sp.trace_context:
        props[Prop.TRACE_CONTEXT] = sp.trace_context
    try:
        born_host = host_bytes(sp.born_host) if sp.born_host else _LOOPBACK
    except ValueError:
        born_host = _LOOPBACK
    return MessageInner(
        topic=msg.topic.name,
        queue_id=queue_id,
        body=bytes(msg.body),
        properties=props,
        born_timestamp=timestamp_ms(sp.born_timestamp),
        born_host=born_host,
    )


def message_type_of(props: dict[str, str], sys_flag: int) -> int:
    """The type a consumer is told a stored message has. A committed transactional message is
    TRANSACTION, as RocketMQ's proxy tells it (from TRAN_MSG, which RocketMQ keeps on the
    committed copy); Longboat's commit removes TRAN_MSG, so its sys flag says it."""
    if Prop.SHARDING_KEY in props:
        return pb.MessageType.FIFO
    if Prop.TIMER_DELIVER_MS in props:
        return pb.MessageType.DELAY
    committed = MessageSysFlag.transaction_type(sys_flag) == MessageSysFlag.TRANSACTION_COMMIT_TYPE
    if committed or props.get(Prop.TRAN_MSG) == "true":
        return pb.MessageType.TRANSACTION
    return pb.MessageType.NORMAL


def to_v2(
    ext: MessageExt,
    *,
    namespace: str,
    receipt_handle: str | None = None,
    attempt: int | None = None,
    invisible_ms: int | None = None,
) -> Any:
    """The v2 `Message` a consumer receives for a stored record."""
    body = decompress_body(ext.body, ext.sys_flag)
    props = ext.properties
    m = pb.Message()
    m.topic.name = ext.topic
    m.topic.resource_namespace = namespace
    m.body = body
    for name, value in props.items():
        if name not in SYSTEM_PROPERTIES:
            m.user_properties[name] = value
    sp = m.system_properties
    tag = props.get(Prop.TAGS)
    if tag:
        sp.tag = tag
    sp.keys.extend(ext.key_list)
    sp.message_id = ext.msg_id
    sp.body_digest.type = pb.DigestType.CRC32
    sp.body_digest.checksum = format(zlib.crc32(body), "08X")
    sp.body_encoding = pb.Encoding.IDENTITY
    sp.message_type = message_type_of(props, ext.sys_flag)
    sp.born_timestamp.FromMilliseconds(ext.born_timestamp)
    sp.born_host = _ip(ext.born_host)
    sp.store_timestamp.FromMilliseconds(ext.store_timestamp)
    sp.store_host = f"{_ip(ext.store_host)}:{ext.store_port}"
    sp.queue_id = ext.queue_id
    sp.queue_offset = ext.queue_offset
    group = props.get(Prop.SHARDING_KEY)
    if group:
        sp.message_group = group
    deliver_ms = props.get(Prop.TIMER_DELIVER_MS)
    if deliver_ms and deliver_ms.isdigit():
        sp.delivery_timestamp.FromMilliseconds(int(deliver_ms))
    trace_context = props.get(Prop.TRACE_CONTEXT)
    if trace_context:
        sp.trace_context = trace_context
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    if attempt is not None:
        sp.delivery_attempt = attempt
    if invisible_ms is not None:
        sp.invisible_duration.FromMilliseconds(invisible_ms)
    return m


def _ip(host: bytes) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return "127.0.0.1"
