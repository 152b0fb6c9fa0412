"""A sink's Arrow batch encoded column-wise into SEND_BATCH_MESSAGE bodies.

The sink used to turn every row into Python objects (a row, a `Message`) and encode them one
by one (~2.6 µs of a task's CPU per row: `bench.spark_bench --encoder-only`); here the
batch's columns become the batch elements of `protocol.batch.join_batch` in a few Arrow and
numpy calls over the whole batch, the same bytes the per-message path writes
(`tests/spark/test_sink_encode.py` holds the two to it).

Both ways of publishing use it: the tasks' at-least-once sends (UNIQ_KEYs reserved from the
producer) and the driver's exactly-once sends (UNIQ_KEYs derived per message).  A batch takes
this path when the per-message path would write every row's properties as given; otherwise
`encode_chunks` answers None and the sink encodes the batch message by message, as before:
for a property map that path reads differently (a null value or an empty name, which it
drops; TAGS, KEYS or UNIQ_KEY, which it sets itself; a name twice), keys that
`Message.key_list` rewrites (leading, trailing or doubled spaces), or a property string over
the element's 2-byte length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
_UNIQ_PREFIX = np.frombuffer(f"{Prop.UNIQ_KEY}{NAME_VALUE_SEPARATOR}".encode(), np.uint8)
_HEX = np.frombuffer(b"0123456789ABCDEF", np.uint8)
_NIBBLE_SHIFTS = np.array([12, 8, 4, 0], np.uint32)
# Keys `Message.key_list` would not keep as they are (it splits on spaces, drops empties).
_KEYS_TO_NORMALISE = r"^ | $|  "
_SET_BY_THE_PRODUCER = pa.array([Prop.TAGS, Prop.KEYS, Prop.UNIQ_KEY])
_BIN = pa.large_binary()
_NOTHING = pa.scalar(b"", _BIN)
_NAME_VALUE_SEPARATOR = pa.scalar(NAME_VALUE_SEPARATOR.encode(), _BIN)
_PROPERTY_SEPARATOR = pa.scalar(PROPERTY_SEPARATOR.encode(), _BIN)


@dataclass(frozen=True, slots=True)
class EncodedChunk:
    """One batch send: its topic, body and the messages' UNIQ_KEYs, comma-joined."""

    topic: str
    body: bytes
    msg_ids: str
    count: int


@dataclass(frozen=True, slots=True)
class Cut:
    """The rows `start` to `end` (excluded) of a batch, sent together to `topic`."""

    topic: str
    start: int
    end: int


# Given a batch's cuts, its rows' UNIQ_KEYs as 32 upper-case hex digits a row.
KeySource = Callable[[list[Cut]], np.ndarray]


def reserved_keys(reserve: Callable[[int], tuple[str, int]]) -> KeySource:
    """Keys drawn from a producer's generator (`Producer.reserve_uniq_keys`), as
    `Producer.send_batch` draws them."""

    def keys(cuts: list[Cut]) -> np.ndarray:
        n = cuts[-1].end
        head, first = reserve(n)
        counters = (first + np.arange(n, dtype=np.uint32)) & 0xFFFF
        ids = np.empty((n, 32), np.uint8)
        ids[:, :28] = np.frombuffer(head.encode(), np.uint8)
        ids[:, 28:] = _HEX[(counters[:, None] >> _NIBBLE_SHIFTS) & 0xF]
        return ids

    return keys


def listed_keys(keys_of: Callable[[list[Cut]], Iterable[str]]) -> KeySource:
    """Keys the caller derives itself (the exactly-once publisher's), 32 hex digits each."""

    def keys(cuts: list[Cut]) -> np.ndarray:
        return np.frombuffer("".join(keys_of(cuts)).encode(), np.uint8).reshape(-1, 32)

    return keys


def row_topics(batch: pa.RecordBatch, default: str | None) -> pa.Array:
    """Each row's topic: its own, else (null or empty) the sink's `topic` option."""
    if "topic" not in batch.schema.names:
        if default is None:
            raise SinkSchemaError("row 0 of a sink batch has no topic")
        return pa.array([default], pa.string()).take(np.zeros(batch.num_rows, np.int64))
    column = batch.column(batch.schema.names.index("topic"))
    topics = _empty_as_null(column)
    if default is not None:
        topics = pc.fill_null(topics, default)
    if topics.null_count:
        raise SinkSchemaError(f"row {_first(pc.is_null(topics))} of a sink batch has no topic")
    return topics


def encode_chunks(
    batch: pa.RecordBatch,
    default_topic: str | None,
    *,
    max_count: int,
    max_body_bytes: int,
    keys: KeySource,
    uniq_last: bool = True,
) -> list[EncodedChunk] | None:
    """The batch as batch sends, cut as `sink.chunks` cuts messages (a run of one topic, at
    most `max_count` messages and `max_body_bytes` of bodies, at least one message), or None
    when a row needs the per-message path.  Each row's UNIQ_KEY comes from `keys` and is
    written last (`Producer.send_batch`'s order) or, without `uniq_last`, right after the
    row's own properties (the exactly-once publisher's).  Raises SinkSchemaError for a row
    with no body or no topic, ClientUsageError for an empty body, as the per-message path
    does."""
    n = batch.num_rows
    if n == 0:
        return []
    names = batch.schema.names
    col = {name: batch.column(names.index(name)) for name in names}
    bodies = _bodies(col["body"])
    tags = _present(col.get("tags"))
    key_list = _present(col.get("keys"))
    if (
        key_list is not None
        and pc.any(pc.match_substring_regex(key_list, _KEYS_TO_NORMALISE)).as_py()
    ):
        return None
    try:
        own = None if "properties" not in col else _own_pairs(col["properties"])
    except _PerMessage:
        return None
    body_len = _lengths(bodies)
    cuts = _cuts(body_len, _topic_runs(row_topics(batch, default_topic)), max_count,
                 max_body_bytes)  # fmt: skip
    ids = keys(cuts)
    uniq = _fixed(np.hstack([np.broadcast_to(_UNIQ_PREFIX, (n, _UNIQ_PREFIX.size)), ids]))
    pieces = [own, _pair(Prop.TAGS, tags), _pair(Prop.KEYS, key_list)]
    pieces.insert(len(pieces) if uniq_last else 1, uniq)
    props = pc.binary_join_element_wise(
        *(p for p in pieces if p is not None), _PROPERTY_SEPARATOR, null_handling="skip"
    )
    props_len = _lengths(props)
    if props_len.max() > _MAX_PROPERTIES:
        return None
    head = np.zeros(n, _HEAD)
    head["total"] = _ELEMENT_OVERHEAD + body_len + props_len
    head["body_len"] = body_len
    elements = pc.binary_join_element_wise(
        _fixed(head.view(np.uint8).reshape(n, _HEAD.itemsize)),
        bodies,
        _fixed(props_len.astype(">i2").view(np.uint8).reshape(n, 2)),
        props,
        _NOTHING,
    )
    return _chunks(elements, cuts, ids)


class _PerMessage(Exception):
    """A row the per-message path would encode otherwise than as given."""


def _own_pairs(properties: pa.MapArray) -> pa.Array | None:
    """Each row's property map as `name` \\x01 value \\x02 ... `name` \\x01 value, in the map's
    order (null for rows without), or None when no row has an entry."""
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
    pairs = pc.binary_join_element_wise(names.cast(_BIN), values.cast(_BIN), _NAME_VALUE_SEPARATOR)
    per_row = pa.LargeListArray.from_arrays(pa.array(offsets - offsets[0], pa.int64()), pairs)
    joined = pc.binary_join(per_row, _PROPERTY_SEPARATOR)
    return pc.if_else(pa.array(lengths > 0), joined, pa.scalar(None, _BIN))


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
    present = _empty_as_null(column)
    return None if present.null_count == len(present) else present


def _empty_as_null(column: pa.Array) -> pa.Array:
    """The per-message path reads an empty tags, keys or topic value as none."""
    return pc.if_else(pc.equal(column, ""), pa.scalar(None, column.type), column)


def _pair(name: str, values: pa.Array | None) -> pa.Array | None:
    """`name` \\x01 value for each row with a value, null for the others."""
    if values is None:
        return None
    prefix = pa.scalar(f"{name}{NAME_VALUE_SEPARATOR}".encode(), _BIN)
    return pc.binary_join_element_wise(prefix, values.cast(_BIN), _NOTHING)


def _fixed(rows: np.ndarray) -> pa.Array:
    """The rows of a 2-D byte array as a binary column."""
    n, width = rows.shape
    data = pa.py_buffer(np.ascontiguousarray(rows))
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, data]).cast(_BIN)


def _lengths(values: pa.Array) -> np.ndarray:
    return pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64)


def _topic_runs(topics: pa.Array) -> list[tuple[int, str]]:
    """(end, topic) of each run of rows with one topic."""
    changes = pc.not_equal(topics[1:], topics[:-1]).to_numpy(zero_copy_only=False)
    ends = np.append(np.flatnonzero(changes) + 1, len(topics)).tolist()
    return [(end, topics[end - 1].as_py()) for end in ends]


def _first(mask: pa.Array) -> int:
    return int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0])


def _cuts(
    body_len: np.ndarray, runs: list[tuple[int, str]], max_count: int, max_body_bytes: int
) -> list[Cut]:
    """Each run of one topic cut as `sink.chunks` cuts a stream of messages."""
    cum = np.concatenate(([0], np.cumsum(body_len)))
    cuts = []
    start = 0
    for run_end, topic in runs:
        while start < run_end:
            fits = int(np.searchsorted(cum, cum[start] + max_body_bytes, side="right")) - 1
            end = min(run_end, start + max_count, max(fits, start + 1))
            cuts.append(Cut(topic, start, end))
            start = end
    return cuts


def _chunks(elements: pa.Array, cuts: list[Cut], ids: np.ndarray) -> list[EncodedChunk]:
    n = len(ids)
    _, offsets_buf, data = elements.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64, n + 1, elements.offset * 8)
    listed = np.empty((n, 33), np.uint8)
    listed[:, :32] = ids
    listed[:, 32] = ord(",")
    return [
        EncodedChunk(
            cut.topic,
            data[int(offsets[cut.start]) : int(offsets[cut.end])].to_pybytes(),
            listed[cut.start : cut.end].tobytes()[:-1].decode(),
            cut.end - cut.start,
        )
        for cut in cuts
    ]
