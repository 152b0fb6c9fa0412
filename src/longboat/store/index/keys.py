"""What the key index is keyed by: each of a message's KEYS and its UNIQ_KEY, hashed with its
topic (`topic_seed`, `key_hash`).

Two readers of the same properties: appends hash them from the property bytes as stored, when
the index is written (`writer.IndexWriter.write`), after the send has been answered;
recovery and replication from records decoded back into dicts.  Both give the same hashes for
the same message: the last non-empty occurrence of a name wins, KEYS split on spaces.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from itertools import repeat

from longboat.protocol.properties import (
    KEY_SEPARATOR,
    PROPERTY_SEPARATOR,
    Prop,
    property_marker,
    raw_property,
    raw_property_each,
)

_KEYS_MARKER = property_marker(Prop.KEYS)
_UNIQ_KEY_MARKER = property_marker(Prop.UNIQ_KEY)
_SEPARATOR = PROPERTY_SEPARATOR.encode()


def topic_seed(topic: str) -> int:
    """The CRC32 state after "topic#", from which each key's hash continues (computed once
    per batch, not once per key)."""
    return zlib.crc32(f"{topic}#".encode())


def key_hash(seed: int, key: str) -> int:
    """CRC32 of "topic#key", given the topic's seed."""
    return zlib.crc32(key.encode(), seed)


def encoded_batch_hashes(
    seed: int, props: Sequence[bytes], offsets: Sequence[int]
) -> tuple[list[int], list[int]]:
    """The index hashes of a batch's messages (encoded properties, as stored) and, beside
    each, its record's offset: `encoded_index_hashes` for every message, in order.

    A producer's batch is nearly always messages with one UNIQ_KEY each and no KEYS; that
    case is read from the whole batch with a few C-speed calls (one join, counts, one regex
    scan) instead of a function call per message.  Anything else (KEYS, a name repeated, an
    empty value, a marker inside a value) takes the per-message path."""
    joined = _SEPARATOR.join(props)
    if _KEYS_MARKER not in joined:
        values = raw_property_each(props, joined, _UNIQ_KEY_MARKER)
        if values is not None:
            return list(map(zlib.crc32, values, repeat(seed))), list(offsets)
    hashes: list[int] = []
    owners: list[int] = []
    for p, offset in zip(props, offsets, strict=True):
        found = encoded_index_hashes(seed, p)
        hashes += found
        owners += [offset] * len(found)
    return hashes, owners


def encoded_index_hashes(seed: int, props: bytes) -> tuple[int, ...]:
    """The hashes of a message's KEYS and UNIQ_KEY read from its encoded properties (`seed`:
    its topic's).  (Tuples: the garbage collector stops tracking tuples of ints.)"""
    uniq = raw_property(props, _UNIQ_KEY_MARKER)
    if _KEYS_MARKER not in props:  # the common case: only a producer's unique id
        return (zlib.crc32(uniq, seed),) if uniq else ()
    keys = raw_property(props, _KEYS_MARKER)
    out = [zlib.crc32(k, seed) for k in keys.split(b" ") if k] if keys else []
    if uniq:
        out.append(zlib.crc32(uniq, seed))
    return tuple(out)


def index_hashes(seed: int, props: dict[str, str]) -> tuple[int, ...]:
    """`encoded_index_hashes` for properties parsed into a dict."""
    keys = props.get(Prop.KEYS)
    out = [key_hash(seed, k) for k in keys.split(KEY_SEPARATOR) if k] if keys else []
    uniq = props.get(Prop.UNIQ_KEY)
    if uniq:
        out.append(key_hash(seed, uniq))
    return tuple(out)
