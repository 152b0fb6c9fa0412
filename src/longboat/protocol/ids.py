"""Message ids: the broker's offset id and the producer's unique key (UNIQ_KEY).

The offset id is store host (IPv4 4 bytes or IPv6 16) + port (int32) + commit-log offset
(int64) in upper-case hex; from it a client finds the broker and the record.  The unique key
only has to be unique; we follow Java's layout (ip, pid, a per-process random, time since the
start of the month, counter) so it reads familiarly in tools.
"""

from __future__ import annotations

import ipaddress
import random
import struct
import threading
from collections.abc import Callable, Sequence
from datetime import datetime

from longboat.protocol.errors import ProtocolError


def host_bytes(host: str) -> bytes:
    """4 bytes for IPv4, 16 for IPv6.

    Only addresses (and "localhost") are accepted: resolving a name would be blocking network
    I/O, which this package never does, so callers resolve names first.  Raises ValueError.
    """
    if host == "localhost":
        return b"\x7f\x00\x00\x01"
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        raise ValueError(f"{host!r} is not an IP address; resolve host names first") from None


def offset_msg_id(host: str, port: int, commit_log_offset: int) -> str:
    return (host_bytes(host) + struct.pack(">iq", port, commit_log_offset)).hex().upper()


def offset_msg_id_from_bytes(host: bytes, port: int, commit_log_offset: int) -> str:
    return offset_msg_id_prefix(host, port) + offset_msg_id_suffix(commit_log_offset)


def offset_msg_id_prefix(host: bytes, port: int) -> str:
    """The host and port part of an offset id, for callers that make many ids of one broker
    (the store: one per appended message) and so build it once."""
    return (host + struct.pack(">i", port)).hex().upper()


def offset_msg_id_suffix(commit_log_offset: int) -> str:
    return f"{commit_log_offset & 0xFFFF_FFFF_FFFF_FFFF:016X}"


def joined_offset_msg_ids(prefix: str, commit_log_offsets: Sequence[int]) -> str:
    """The offset ids of one broker's records (`prefix` from `offset_msg_id_prefix`), joined
    by commas as a batch's send answer carries them.  The offsets are packed and hexed in one
    call each, split by `hex`'s own separator and prefixed by one `replace`, rather than
    formatted one by one: this runs for every batch a broker stores."""
    count = len(commit_log_offsets)
    if count == 1:
        return prefix + offset_msg_id_suffix(commit_log_offsets[0])
    digits = struct.pack(f">{count}Q", *commit_log_offsets).hex(",", 8).upper()
    return prefix + digits.replace(",", f",{prefix}")


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """(host, port, commit-log offset) of an offset message id."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ProtocolError(f"not an offset message id: {msg_id!r}") from None
    if len(raw) == 16:
        host = str(ipaddress.IPv4Address(raw[:4]))
        port, offset = struct.unpack(">iq", raw[4:])
    elif len(raw) == 28:
        host = str(ipaddress.IPv6Address(raw[:16]))
        port, offset = struct.unpack(">iq", raw[16:])
    else:
        raise ProtocolError(f"not an offset message id: {msg_id!r}")
    return host, port, offset


# "00" .. "FF": a UNIQ_KEY's counter is written as two of these.
_HEX_BYTES = [f"{i:02X}" for i in range(256)]


class UniqKeyGenerator:
    """Thread-safe generator of UNIQ_KEY ids, 32 hex digits for an IPv4 client.

    The protocol package owns no clock and no process state, so the caller passes them in:
    `now_ms` (wall-clock milliseconds; the key carries the time since the month began, in
    local time, as Java's does), `pid`, and `rng`, which draws the per-generator random part
    and the counter's start.  Tests pass fixed ones and get fixed keys.
    """

    def __init__(
        self, client_ip: str, *, now_ms: Callable[[], int], pid: int, rng: random.Random
    ) -> None:
        fixed = host_bytes(client_ip) + struct.pack(">hi", pid & 0x7FFF, rng.getrandbits(31))
        self._prefix = fixed.hex().upper()
        self._now_ms = now_ms
        self._counter = rng.getrandbits(15)
        self._lock = threading.Lock()
        self._month_start_ms = 0
        self._next_month_ms = 0

    def _roll_month(self, now_ms: int) -> None:
        now = datetime.fromtimestamp(now_ms / 1000)
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        nxt = start.replace(year=start.year + (start.month == 12), month=start.month % 12 + 1)
        self._month_start_ms = int(start.timestamp() * 1000)
        self._next_month_ms = int(nxt.timestamp() * 1000)

    def next(self) -> str:
        return self.next_many(1)[0]

    def next_many(self, n: int) -> list[str]:
        """`n` ids from one clock read and one lock (a batch's messages)."""
        head, first = self.reserve(n)
        # Two table lookups a counter instead of formatting it: a batch makes one id a message.
        hexes = _HEX_BYTES
        return [head + hexes[(c >> 8) & 0xFF] + hexes[c & 0xFF] for c in range(first, first + n)]

    def reserve(self, n: int) -> tuple[str, int]:
        """`n` ids at once, for a caller that writes them itself (column-wise): their shared
        28-digit head and the first counter value; id i is `head` then `(first + i) & 0xFFFF`
        as 4 upper-case hex digits."""
        now_ms = self._now_ms()
        with self._lock:
            if now_ms >= self._next_month_ms:
                self._roll_month(now_ms)
            first = self._counter
            self._counter = (first + n) & 0xFFFF
        since_month = (now_ms - self._month_start_ms) & 0x7FFFFFFF
        return f"{self._prefix}{since_month:08X}", first
