"""The batch body of SEND_BATCH_MESSAGE: many short records, one per message.

TOTALSIZE 4 | MAGIC 4 (0) | BODYCRC 4 (0) | FLAG 4 | BODYLEN 4 + BODY | PROPLEN 2 + PROPS
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from longboat.protocol.errors import ProtocolError
from longboat.protocol.properties import properties_to_string, string_to_properties

_HEAD = struct.Struct(">iiiii")  # total, magic, crc, flag, body length
_I16 = struct.Struct(">h")


@dataclass(slots=True)
class BatchItem:
    body: bytes
    properties: dict[str, str]
    flag: int = 0


def encode_batch(items: list[BatchItem]) -> bytes:
    parts: list[bytes] = []
    for item in items:
        props = properties_to_string(item.properties).encode("utf-8")
        total = 4 + 4 + 4 + 4 + 4 + len(item.body) + 2 + len(props)
        parts += (
            _HEAD.pack(total, 0, 0, item.flag, len(item.body)),
            item.body,
            _I16.pack(len(props)),
            props,
        )
    return b"".join(parts)


def decode_batch(data: bytes | memoryview) -> list[BatchItem]:
    view = memoryview(data)
    items: list[BatchItem] = []
    pos = 0
    limit = len(view)
    try:
        while pos < limit:
            total, _magic, _crc, flag, body_len = _HEAD.unpack_from(view, pos)
            end = pos + total
            p = pos + _HEAD.size
            if total < 22 or end > limit or body_len < 0 or p + body_len + 2 > end:
                raise ProtocolError(f"bad batch element at {pos}")
            body = bytes(view[p : p + body_len])
            p += body_len
            (props_len,) = _I16.unpack_from(view, p)
            p += 2
            if props_len < 0 or p + props_len != end:
                raise ProtocolError(f"bad batch element properties at {pos}")
            props = string_to_properties(bytes(view[p:end]).decode("utf-8"))
            items.append(BatchItem(body=body, properties=props, flag=flag))
            pos = end
    except struct.error:
        raise ProtocolError(f"truncated batch element at {pos}") from None
    except UnicodeDecodeError:
        raise ProtocolError(f"batch element at {pos} has non-UTF-8 properties") from None
    finally:
        view.release()
    return items
