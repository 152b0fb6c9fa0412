"""What the key index is keyed by: each of a message's KEYS and its UNIQ_KEY, hashed with its
topic (`index.topic_seed`, `index.key_hash`).

Two readers of the same properties: appends hash them from the property bytes as stored, when
the index is written (`MessageStore._index_appended`), after the send has been answered;
recovery and replication from records decoded back into dicts.  Both give the same hashes for
the same message: the last non-empty occurrence of a name wins, KEYS split on spaces.
"""

from __future__ import annotations

import zlib

from longboat.protocol.properties import KEY_SEPARATOR, Prop, property_marker, raw_property
from longboat.store.index import key_hash

_KEYS_MARKER = property_marker(Prop.KEYS)
_UNIQ_KEY_MARKER = property_marker(Prop.UNIQ_KEY)


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
