"""Body compression: zlib streams for bodies of 4 KiB and more, flagged in the sys flag."""

from __future__ import annotations

import zlib

from longboat.protocol.errors import ProtocolError
from longboat.protocol.sysflags import MessageSysFlag

COMPRESS_OVER = 4096
ZLIB_LEVEL = 5


def maybe_compress(body: bytes, sys_flag: int, threshold: int = COMPRESS_OVER) -> tuple[bytes, int]:
    """(body, sys_flag) compressed when the body reaches the threshold and compressing makes
    it smaller (random or already compressed bodies grow under zlib: they travel as they are)."""
    if len(body) < threshold:
        return body, sys_flag
    packed = zlib.compress(body, ZLIB_LEVEL)
    if len(packed) >= len(body):
        return body, sys_flag
    return packed, sys_flag | MessageSysFlag.COMPRESSED


def decompress_body(body: bytes, sys_flag: int) -> bytes:
    """The application's body; raises ProtocolError on a corrupt or unsupported stream."""
    if not sys_flag & MessageSysFlag.COMPRESSED:
        return body
    kind = sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK
    if kind not in (0, MessageSysFlag.COMPRESSION_ZLIB):
        raise ProtocolError(f"unsupported compression type 0x{kind:x} (only zlib is built in)")
    try:
        return zlib.decompress(body)
    except zlib.error as exc:
        raise ProtocolError(f"compressed body is corrupt: {exc}") from None
