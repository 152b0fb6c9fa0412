"""Finding stored messages by key: the KEYS a producer set, or the UNIQ_KEY it generated.

The key index answers with candidates only (hash collisions, entries of records a crash cut,
records of other topics with the same key hash), so each candidate's record is read back and
kept only if its topic, store time and keys really match: what a caller gets is always right,
never merely likely.
"""

from __future__ import annotations

from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import decode_record
from longboat.protocol.properties import KEY_SEPARATOR, Prop
from longboat.store.commit_log import CommitLog
from longboat.store.index.key_index import KeyIndex
from longboat.store.index.keys import key_hash, topic_seed


def query_by_key(
    index: KeyIndex,
    commit_log: CommitLog,
    topic: str,
    key: str,
    max_num: int,
    begin_ms: int,
    end_ms: int,
) -> list[bytes]:
    """Stored records of `topic` whose KEYS include `key` or whose UNIQ_KEY is `key`,
    stored within [begin_ms, end_ms], newest first, at most `max_num`."""
    out: list[bytes] = []
    seen: set[int] = set()
    # Ask for more than max_num: hash collisions and cut records are filtered below.
    h = key_hash(topic_seed(topic), key)
    for phys in index.lookup(h, begin_ms, end_ms, max_num * 4 + 16):
        if len(out) >= max_num:
            break
        if phys in seen:
            continue
        seen.add(phys)
        record = commit_log.read_record(phys)
        if record is None:
            continue
        try:
            msg = decode_record(record)
        except ProtocolError:
            continue
        if msg.topic != topic or not begin_ms <= msg.store_timestamp <= end_ms:
            continue
        keys = msg.properties.get(Prop.KEYS, "")
        if msg.properties.get(Prop.UNIQ_KEY) == key or key in keys.split(KEY_SEPARATOR):
            out.append(record)
    return out
