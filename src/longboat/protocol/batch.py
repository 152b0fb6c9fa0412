"""The batch body of SEND_BATCH_MESSAGE: many short records, one per message.

TOTALSIZE 4 | MAGIC 4 (0) | BODYCRC 4 (0) | FLAG 4 | BODYLEN 4 + BODY | PROPLEN 2 + PROPS
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from longboat.protocol.errors import ProtocolError
from longboat.protocol.properties import (
    PROPERTY_SEPARATOR,
    properties_to_string,
    string_to_properties,
)

_HEAD = struct.Struct(">iiiii")  # total, magic, crc, flag, body length
_READ_HEAD = struct.Struct(">i8xii")  # total, flag, body length (magic and crc unused)
_I16 = struct.Struct(">h")
_HEAD_SIZE = _HEAD.size
_ELEMENT_OVERHEAD = _HEAD.size + _I16.size  # an element with empty body and properties
_PROPERTY_SEPARATOR = PROPERTY_SEPARATOR.encode()


@dataclass(slots=True)
class BatchItem:
    body: bytes
    properties: dict[str, str]
    flag: int = 0


def encode_batch(items: list[BatchItem]) -> bytes:
    return join_batch(
        [(item.body, properties_to_string(item.properties).encode(), item.flag) for item in items]
    )


def join_batch(elements: list[tuple[bytes, bytes, int]]) -> bytes:
    """The batch body of (body, encoded properties, flag) elements: `split_batch` reversed,
    for a producer that encodes each message's properties itself."""
    parts: list[bytes] = []
    pack_head = _HEAD.pack
    pack_i16 = _I16.pack
    for body, props, flag in elements:
        body_len = len(body)
        props_len = len(props)
        parts += (
            pack_head(_ELEMENT_OVERHEAD + body_len + props_len, 0, 0, flag, body_len),
            body,
            pack_i16(props_len),
            props,
        )
    return b"".join(parts)


def split_batch(
    data: bytes | memoryview, appended: bytes | None = None
) -> list[tuple[bytes, bytes, int]]:
    """Each element's body, encoded property string (as sent, not parsed) and flag.

    The broker's path: it keeps each message's property bytes, appends its own few properties
    (`appended`, encoded; None leaves them as sent) and stores them, so no message of a batch
    is parsed into a dict.
    They are appended here, as each element is cut out, rather than in a second pass over the
    batch: `with_appended` of each, inlined (a call per message would cost as much as the
    rest of its share of the split).  Raises ProtocolError for a malformed element (nothing
    of the batch is used then).
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    # `with_appended`: after a separator unless the element's properties are empty or end
    # with one.  Without `appended` both add b"", which copies nothing.
    if appended is None:
        glue = appended = b""
    else:
        glue = _PROPERTY_SEPARATOR + appended
    elements: list[tuple[bytes, bytes, int]] = []
    append = elements.append
    unpack_head = _READ_HEAD.unpack_from
    unpack_i16 = _I16.unpack_from
    pos = 0
    limit = len(data)
    try:
        while pos < limit:
            total, flag, body_len = unpack_head(data, pos)
            p = pos + _HEAD_SIZE
            q = p + body_len
            end = pos + total
            if body_len < 0:
                raise ProtocolError(f"bad batch element at {pos}")
            (props_len,) = unpack_i16(data, q)
            # With lengths that add up to the total, the element is at least its overhead and
            # its properties end where it does: the one check covers them all.
            if props_len < 0 or q + 2 + props_len != end or end > limit:
                raise ProtocolError(f"bad batch element properties at {pos}")
            if props_len and data[end - 1] != 2:
                append((data[p:q], data[q + 2 : end] + glue, flag))
            else:
                append((data[p:q], data[q + 2 : end] + appended, flag))
            pos = end
    except struct.error:
        raise ProtocolError(f"truncated batch element at {pos}") from None
    return elements


def decode_batch(data: bytes | memoryview) -> list[BatchItem]:
    """Each element with its properties parsed (clients and tools; the broker splits)."""
    items: list[BatchItem] = []
    for body, props, flag in split_batch(data):
        try:
            text = props.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("a batch element has non-UTF-8 properties") from None
        items.append(BatchItem(body=body, properties=string_to_properties(text), flag=flag))
    return items
