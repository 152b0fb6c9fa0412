"""A sink's Arrow batch encoded column-wise into SEND_BATCH_MESSAGE bodies.

The sink used to turn every row into Python objects (a row, a `Message`) and encode them one
by one (~2.6 µs of a task's CPU per row: `bench.spark_bench --encoder-only`); here the
batch's columns become the batch elements of `protocol.batch.join_batch` in a few Arrow and
numpy calls over the whole batch, the same bytes the per-message path writes
(`tests/spark/test_sink_encode.py` holds the two to it).

A batch takes this path when the per-message path would write every row's properties as
given.  Otherwise `encode_chunks` answers None and the sink encodes the batch message by
message, as before: for a property map that path reads differently (a null value or an empty
name, which it drops; TAGS, KEYS or UNIQ_KEY, which it sets itself; a name twice), keys that
`Message.key_list` rewrites (leading, trailing or doubled spaces), or a property string over
the element's 2-byte length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from longboat.client.errors import ClientUsageError
from longboat.protocol.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, Prop
from longboat.spark.arrow import SinkSchemaError

# An element: total, magic, body CRC, flag (4 bytes each), body length, body, property
# length (2), properties; magic, CRC and flag are 0 as the producer writes them.
_HEAD = np.dtype([("total", ">i4"), ("magic", ">i4"), ("crc", ">i4"), ("flag", ">i4"),
                  ("body_len", ">i4")])  # fmt: skip
_ELEMENT_OVERHEAD = _HEAD.itemsize + 2
_MAX_PROPERTIES = 0x7FFF
_UNIQ_PREFIX = f"{Prop.UNIQ_KEY}{NAME_VALUE_SEPARATOR}".encode()
_UNIQ_PART = len(_UNIQ_PREFIX) + 32  # the last property: UNIQ_KEY and its 32 hex digits
_HEX = np.frombuffer(b"0123456789ABCDEF", np.uint8)
_NIBBLE_SHIFTS = np.array([12, 8, 4, 0], np.uint32)
# Keys `Message.key_list` would not keep as they are (it splits on spaces, drops empties).
_KEYS_TO_NORMALISE = r"^ | $|  "
_SET_BY_THE_PRODUCER = pa.array([Prop.TAGS, Prop.KEYS, Prop.UNIQ_KEY])
_BIN = pa.large_binary()
_NOTHING = pa.scalar(b"", _BIN)


@dataclass(frozen=True, slots=True)
class EncodedChunk:
    """One batch send: its topic, body and the messages' UNIQ_KEYs, comma-joined."""

    topic: str
    body: bytes
    msg_ids: str
    count: int


def encode_chunks(
    batch: pa.RecordBatch,
    default_topic: str | None,
    *,
    max_count: int,
    max_body_bytes: int,
    reserve: Callable[[int], tuple[str, int]],
) -> list[EncodedChunk] | None:
    """The batch as batch sends, cut as `sink.chunks` cuts messages (a run of one topic, at
    most `max_count` messages and `max_body_bytes` of bodies, at least one message), or None
    when a row needs the per-message path.  `reserve` gives the UNIQ_KEYs
    (`Producer.reserve_uniq_keys`).  Raises SinkSchemaError for a row with no body or no
    topic, ClientUsageError for an empty body, as the per-message path does."""
    n = batch.num_rows
    if n == 0:
        return []
    names = batch.schema.names
    col = {name: batch.column(names.index(name)) for name in names}
    bodies = _bodies(col["body"])
    tags = _present(col.get("tags"))
    keys = _present(col.get("keys"))
    if keys is not None and pc.any(pc.match_substring_regex(keys, _KEYS_TO_NORMALISE)).as_py():
        return None
    try:
        own = None if "properties" not in col else _own_pairs(col["properties"])
    except _PerMessage:
        return None
    # In the order the per-message path writes them: the row's own, then what it sets.
    candidates = (own, _pair(Prop.TAGS, tags), _pair(Prop.KEYS, keys))
    pairs = [p for p in candidates if p is not None]
    props_len = np.full(n, _UNIQ_PART, np.int64)
    for pair in pairs:
        props_len += _lengths(pair)
    if props_len.max() > _MAX_PROPERTIES:
        return None
    uniq_ids, uniq_parts = _uniq_keys(n, reserve)
    body_len = _lengths(bodies)
    head = np.zeros(n, _HEAD)
    head["total"] = _ELEMENT_OVERHEAD + body_len + props_len
    head["body_len"] = body_len
    props_len_be = props_len.astype(">i2")
    elements = pc.binary_join_element_wise(
        _fixed(head.view(np.uint8), _HEAD.itemsize),
        bodies,
        _fixed(props_len_be.view(np.uint8), 2),
        *pairs,
        uniq_parts,
        _NOTHING,
    )
    runs = _topic_runs(col.get("topic"), default_topic, n)
    return list(_cut(elements, body_len, runs, uniq_ids, max_count, max_body_bytes))


class _PerMessage(Exception):
    """A row the per-message path would encode otherwise than as given."""


def _own_pairs(properties: pa.MapArray) -> pa.Array | None:
    """Each row's property map as `name` \\x01 value \\x02 ..., in the map's order (b"" for
    rows without), or None when no row has an entry."""
    offsets = properties.offsets.to_numpy().astype(np.int64)
    lengths = np.diff(offsets)
    total = int(offsets[-1] - offsets[0])
    if total == 0:
        return None
    if properties.null_count and lengths[properties.is_null().to_numpy(zero_copy_only=False)].any():
        raise _PerMessage  # a null row over entries: it has none, its entries say otherwise
    entries = properties.values.slice(int(offsets[0]), total)
    names, values = entries.field(0), entries.field(1)
    if (
        values.null_count
        or pc.any(pc.equal(names, "")).as_py()
        or pc.any(pc.is_in(names, value_set=_SET_BY_THE_PRODUCER)).as_py()
    ):
        raise _PerMessage
    rows = np.repeat(np.arange(len(properties)), lengths)
    distinct = pa.table({"row": rows, "name": names}).group_by(["row", "name"]).aggregate([])
    if distinct.num_rows < total:
        raise _PerMessage  # a name twice in one map: the per-message path keeps one
    text = pa.large_string()
    pairs = pc.binary_join_element_wise(
        names.cast(text),
        pa.scalar(NAME_VALUE_SEPARATOR, text),
        values.cast(text),
        pa.scalar(PROPERTY_SEPARATOR, text),
        pa.scalar("", text),
    )
    per_row = pa.LargeListArray.from_arrays(pa.array(offsets - offsets[0], pa.int64()), pairs)
    return pc.binary_join(per_row, pa.scalar("", text)).cast(_BIN)


def _bodies(body: pa.Array) -> pa.Array:
    if body.null_count:
        row = _first(pc.is_null(body))
        raise SinkSchemaError(f"row {row} of a sink batch has a null body")
    bodies = body.cast(_BIN)
    if pc.any(pc.equal(pc.binary_length(bodies), 0)).as_py():
        raise ClientUsageError("message body is empty")
    return bodies


def _present(column: pa.Array | None) -> pa.Array | None:
    """A tags or keys column with empty values as nulls (the per-message path skips both), or
    None when no row has one."""
    if column is None or column.null_count == len(column):
        return None
    present = pc.if_else(pc.equal(column, ""), pa.scalar(None, column.type), column)
    return None if present.null_count == len(present) else present


def _pair(name: str, values: pa.Array | None) -> pa.Array | None:
    """`name` \\x01 value \\x02 for each row with a value, b"" for the others."""
    if values is None:
        return None
    text = pa.large_string()
    joined = pc.binary_join_element_wise(
        pa.scalar(f"{name}{NAME_VALUE_SEPARATOR}", text),
        values.cast(text),
        pa.scalar(PROPERTY_SEPARATOR, text),
        pa.scalar("", text),
    )
    return pc.fill_null(joined, "").cast(_BIN)


def _uniq_keys(n: int, reserve: Callable[[int], tuple[str, int]]) -> tuple[np.ndarray, pa.Array]:
    """The rows' UNIQ_KEYs as (n, 32) hex digits, and the `UNIQ_KEY` \\x01 key parts."""
    head, first = reserve(n)
    counters = (first + np.arange(n, dtype=np.uint32)) & 0xFFFF
    digits = _HEX[(counters[:, None] >> _NIBBLE_SHIFTS) & 0xF]
    ids = np.empty((n, 32), np.uint8)
    ids[:, :28] = np.frombuffer(head.encode(), np.uint8)
    ids[:, 28:] = digits
    parts = np.empty((n, _UNIQ_PART), np.uint8)
    parts[:, : len(_UNIQ_PREFIX)] = np.frombuffer(_UNIQ_PREFIX, np.uint8)
    parts[:, len(_UNIQ_PREFIX) :] = ids
    return ids, _fixed(parts, parts.shape[1])


def _fixed(data: np.ndarray, width: int) -> pa.Array:
    """Rows of `width` bytes (a C-contiguous array) as a binary column."""
    n = data.size // width
    raw = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(data)])
    return raw.cast(_BIN)


def _lengths(values: pa.Array) -> np.ndarray:
    return pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64)


def _topic_runs(column: pa.Array | None, default: str | None, n: int) -> list[tuple[int, str]]:
    """(end, topic) of each run of rows with one topic: a row's own, else (null or empty) the
    sink's `topic` option."""
    if column is None:
        if default is None:
            raise SinkSchemaError("row 0 of a sink batch has no topic")
        return [(n, default)]
    topics = pc.if_else(pc.equal(column, ""), pa.scalar(None, column.type), column)
    if default is not None:
        topics = pc.fill_null(topics, default)
    if topics.null_count:
        raise SinkSchemaError(f"row {_first(pc.is_null(topics))} of a sink batch has no topic")
    changes = pc.not_equal(topics[1:], topics[:-1]).to_numpy(zero_copy_only=False)
    ends = np.append(np.flatnonzero(changes) + 1, n).tolist()
    return [(end, topics[end - 1].as_py()) for end in ends]


def _first(mask: pa.Array) -> int:
    return int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0])


def _cut(
    elements: pa.Array,
    body_len: np.ndarray,
    runs: list[tuple[int, str]],
    ids: np.ndarray,
    max_count: int,
    max_body_bytes: int,
) -> Iterator[EncodedChunk]:
    """Each run of one topic cut as `sink.chunks` cuts a stream of messages."""
    n = len(body_len)
    _, offsets_buf, data = elements.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64, n + 1, elements.offset * 8)
    cum = np.concatenate(([0], np.cumsum(body_len)))
    listed = np.empty((n, 33), np.uint8)
    listed[:, :32] = ids
    listed[:, 32] = ord(",")
    start = 0
    for run_end, topic in runs:
        while start < run_end:
            fits = int(np.searchsorted(cum, cum[start] + max_body_bytes, side="right")) - 1
            end = min(run_end, start + max_count, max(fits, start + 1))
            body = data[int(offsets[start]) : int(offsets[end])].to_pybytes()
            msg_ids = listed[start:end].tobytes()[:-1].decode()
            yield EncodedChunk(topic, body, msg_ids, end - start)
            start = end
