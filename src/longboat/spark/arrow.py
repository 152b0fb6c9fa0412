"""Pulled records straight into Arrow columns, and Arrow rows back into messages to send.

Spark accepts a `pyarrow.RecordBatch` from `read()` only if its schema is exactly the one it
derives from the data source schema (nullable fields, `timestamp[us, tz=UTC]`, a map whose
keys are non-null), so the Arrow schema is derived here from the Spark schema by Spark's own
function, once, and every batch is built against it.  Yielding Arrow instead of tuples skips
Spark's per-value conversion, which costs several times more than the decoding itself.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from longboat.protocol.errors import ProtocolError
from longboat.protocol.ids import offset_msg_id_from_bytes
from longboat.protocol.message import (
    MAGIC_V1,
    MAGIC_V2,
    POS_BODY_V4,
    POS_BODYLEN_V4,
    POS_BORNTIMESTAMP,
    POS_MAGIC,
    POS_PHYSICALOFFSET,
    POS_QUEUEID,
    POS_QUEUEOFFSET,
    POS_RECONSUMETIMES_V4,
    POS_STOREHOST_V4,
    POS_STORETIMESTAMP_V4,
    POS_SYSFLAG,
    MessageExt,
)
from longboat.protocol.properties import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, Prop
from longboat.protocol.sysflags import MessageSysFlag

SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("broker", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("queue_offset", LongType()),
        StructField("msg_id", StringType()),
        StructField("keys", StringType()),
        StructField("tags", StringType()),
        StructField("body", BinaryType()),
        StructField("born_timestamp", TimestampType()),
        StructField("store_timestamp", TimestampType()),
        StructField("reconsume_times", IntegerType()),
        StructField("properties", MapType(StringType(), StringType())),
    ]
)

# Properties the schema already shows as columns, or that the client adds on the way in.
HIDDEN_PROPERTIES = frozenset(
    {Prop.TAGS, Prop.KEYS, Prop.UNIQ_KEY, Prop.MIN_OFFSET, Prop.MAX_OFFSET}
)


@cache
def arrow_schema() -> pa.Schema:
    return to_arrow_schema(SCHEMA, timezone="UTC")


def _ms_to_timestamps(values: list[int] | np.ndarray) -> pa.Array:
    micros = np.asarray(values, dtype=np.int64) * 1000
    return _numbers(micros, pa.timestamp("us", tz="UTC"))


# ---------------------------------------------------------------------------- columnar decode
#
# A pull answer is stored records back to back.  Python walks only the record sizes; every
# field is then gathered for all records at once with numpy (fixed positions from
# `protocol.message`, read through a view with an item at every byte), and properties are
# split with numpy on the bytes.  Records this path does not cover (compressed bodies, IPv6
# hosts) go through `decode_records` instead.

_I32 = struct.Struct(">i")
_SLOW_FLAGS = (
    MessageSysFlag.COMPRESSED | MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOSTADDRESS_V6
)


def record_starts(body: bytes) -> np.ndarray:
    starts: list[int] = []
    pos, limit, unpack = 0, len(body), _I32.unpack_from
    while pos < limit:
        starts.append(pos)
        size = unpack(body, pos)[0]
        if size <= 0:
            raise ProtocolError(f"record size {size} at {pos}")
        pos += size
    if pos != limit:
        raise ProtocolError("the last record overruns the pull answer")
    return np.array(starts, dtype=np.int64)


# The fixed part of a v4-host record, up to its body: gathered for all records with one index
# operation, as opaque items of its size (a copy of so many bytes each; numpy copies the
# fields of a structured item one by one), and read as big-endian fields in place.
_FIXED = np.dtype(
    {
        "names": ["size", "magic", "queue_id", "queue_offset", "phys", "sys_flag", "born_ts",
                  "store_ts", "reconsume", "body_len"],
        "formats": [">i4", ">i4", ">i4", ">i8", ">i8", ">i4", ">i8", ">i8", ">i4", ">i4"],
        "offsets": [0, POS_MAGIC, POS_QUEUEID, POS_QUEUEOFFSET, POS_PHYSICALOFFSET, POS_SYSFLAG,
                    POS_BORNTIMESTAMP, POS_STORETIMESTAMP_V4, POS_RECONSUMETIMES_V4,
                    POS_BODYLEN_V4],
        "itemsize": POS_BODY_V4,
    }
)  # fmt: skip
_FIXED_BYTES = np.dtype((np.void, _FIXED.itemsize))
_VIEW_INLINE = 12  # Arrow's view layout keeps values up to 12 bytes inside the view
_HEAD_SPAN = np.arange(_VIEW_INLINE)


def _every_byte(buf: bytes | np.ndarray, dtype: np.dtype | str) -> np.ndarray:
    """`buf` read as one `dtype` item starting at every byte (unaligned, overlapping), so that
    indexing it with positions gathers whole fields in one step per field, not per byte."""
    dtype = np.dtype(dtype)
    count = len(buf) - dtype.itemsize + 1
    if count <= 0:
        return np.zeros(0, dtype)
    return np.ndarray(shape=(count,), dtype=dtype, buffer=buf, strides=(1,))


def _gather(buf: bytes, at: np.ndarray, dtype: str) -> np.ndarray:
    """The big-endian field of type `dtype` at each position in `at`."""
    return _every_byte(buf, dtype)[at].astype(np.int64)


def _slices(
    body: bytes, buf: np.ndarray, at: np.ndarray, lengths: np.ndarray, kind: pa.DataType
) -> pa.Array:
    """The slices [at, at + lengths) of `body` as one binary or string array: Arrow views
    into `body` (16 bytes each, built with numpy), copied into a plain array by one cast in
    C++ (a bytes join of the slices costs a Python call per value).  A view is four int32
    words: the length, then for a value over 12 bytes its first four bytes, buffer 0 and its
    position; a shorter value is kept inside the view, zero-padded."""
    n = len(at)
    views = np.zeros((n, 4), dtype="<i4")
    views[:, 0] = lengths
    inline = lengths <= _VIEW_INLINE
    long_ = ~inline
    if long_.all():
        views[:, 1] = _every_byte(body, "<i4")[at]
        views[:, 3] = at
    else:
        views[long_, 1] = _every_byte(body, "<i4")[at[long_]]
        views[long_, 3] = at[long_]
        short_at, short_len = at[inline], lengths[inline]
        head = _heads(body, buf, short_at)
        head[short_len[:, None] <= _HEAD_SPAN] = 0
        views[inline, 1:] = head.view("<i4")
    view_kind = pa.binary_view() if kind == pa.binary() else pa.string_view()
    views_array = pa.Array.from_buffers(
        view_kind, n, [None, pa.py_buffer(views), pa.py_buffer(body)]
    )
    return views_array.cast(kind)


def _heads(body: bytes, buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The _VIEW_INLINE bytes from each position of `at`, one row each: gathered as whole
    items of that size, and byte by byte (clipped to the buffer) where they would run past
    its end."""
    limit = len(buf) - _VIEW_INLINE
    late = at > limit
    head = (
        _every_byte(body, np.dtype((np.void, _VIEW_INLINE)))[np.minimum(at, limit)]
        .view(np.uint8)
        .reshape(len(at), _VIEW_INLINE)
        if limit >= 0
        else np.zeros((len(at), _VIEW_INLINE), np.uint8)
    )
    if late.any():
        head[late] = buf[np.minimum(at[late, None] + _HEAD_SPAN, len(buf) - 1)]
    return head


_PAIR_END = PROPERTY_SEPARATOR.encode()[0]
_NAME_END = NAME_VALUE_SEPARATOR.encode()[0]


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Every property pair of a batch of records, in order: the record it belongs to (`rows`),
    where its name lies in the strings' buffer (`data`), and the values as strings."""

    data: np.ndarray
    name_at: np.ndarray
    name_len: np.ndarray
    rows: np.ndarray
    values: pa.Array
    # The buffer read as a little-endian word at every byte (zero-padded past its end), and
    # the word each name starts with: names are compared a word at a time.
    words: np.ndarray
    first_words: np.ndarray

    def named(self, name: str) -> np.ndarray:
        """Which pairs carry this name: same length, then the same bytes, a word at a time
        (each masked to the bytes the name has there)."""
        raw = name.encode()
        same = self.name_len == len(raw)
        same &= _masked_equal(self.first_words, raw[:8])
        for at in range(8, len(raw), 8):  # longer names: only the pairs still in the race
            hit = np.flatnonzero(same)
            same[hit] = _masked_equal(self.words[self.name_at[hit] + at], raw[at : at + 8])
        return same

    def names(self, which: np.ndarray) -> pa.Array:
        """The names of the pairs `which` selects, as strings."""
        return _short_slices(self.data, self.name_at[which], self.name_len[which])


def _masked_equal(words: np.ndarray, chunk: bytes) -> np.ndarray:
    """Whether each word's low bytes are `chunk` (up to 8 bytes; the rest are not looked at)."""
    mask = np.uint64((1 << (8 * len(chunk))) - 1)
    return (words & mask) == np.uint64(int.from_bytes(chunk, "little"))


def _split_properties(props: pa.StringArray) -> _Pairs:
    """Every record's properties string cut into pairs as `string_to_properties` reads them:
    pairs end at \\x02 or the string's end, a name ends at its first \\x01, pairs without one
    or with an empty name or value are skipped.  Done on the strings' one data buffer with
    numpy, with no per-record Python: `_alternating_pairs` when every string alternates
    name and value separators (what producers write), else `_any_pairs`."""
    n = len(props)
    offsets = np.frombuffer(props.buffers()[1], np.int32, n + 1, props.offset * 4).astype(np.int64)
    raw = props.buffers()[2]
    data = np.frombuffer(raw, np.uint8) if raw is not None else np.zeros(0, np.uint8)
    data = data[: offsets[-1]]
    found = _alternating_pairs(data, offsets)
    starts, name_end, ends, rows = found if found is not None else _any_pairs(data, offsets)
    keep = (name_end > starts) & (ends > name_end + 1)
    if not keep.all():
        starts, name_end, ends, rows = starts[keep], name_end[keep], ends[keep], rows[keep]
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[: len(data)] = data
    words = _every_byte(padded, "<u8")
    return _Pairs(
        data=data,
        name_at=starts,
        name_len=name_end - starts,
        rows=rows,
        values=_short_slices(data, name_end + 1, ends - name_end - 1),
        words=words,
        first_words=words[starts],
    )


_Cuts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # pair start, name end, end, row


def _alternating_pairs(data: np.ndarray, offsets: np.ndarray) -> _Cuts | None:
    """The pairs when, in every string, separators alternate \\x01, \\x02, \\x01 … from the
    first: one search for separator bytes, then work per separator (records are found by
    searching each record's start among the separators, not each separator among records).
    None for anything else (a \\x02 first or twice in a row, a \\x01 inside a value, a zero
    byte)."""
    sep = np.flatnonzero(data <= _PAIR_END)
    first = np.searchsorted(sep, offsets)  # each record's first separator
    counts = np.diff(first)
    rows_of_sep = np.repeat(np.arange(len(counts)), counts)
    index = np.arange(len(sep)) - first[rows_of_sep]  # a separator's place in its record
    if np.any(data[sep] != _NAME_END + (index & 1)):
        return None
    at = np.flatnonzero((index & 1) == 0)  # the name ends: one per pair
    rows, index = rows_of_sep[at], index[at]
    starts = np.where(index == 0, offsets[rows], sep[at - 1] + 1)
    last = index + 1 >= counts[rows]  # no \\x02 after the value: it runs to the string's end
    ends = np.where(last, offsets[rows + 1], sep[np.minimum(at + 1, len(sep) - 1)])
    return starts, sep[at], ends, rows


def _any_pairs(data: np.ndarray, offsets: np.ndarray) -> _Cuts:
    """The pairs of any strings: a separator search per byte kind, then one position lookup
    per pair."""
    pair_ends = np.flatnonzero(data == _PAIR_END)
    # A pair starts at a record's start or right after a pair's end (never at the very end).
    is_start = np.zeros(len(data) + 1, dtype=bool)
    is_start[offsets[:-1]] = True
    is_start[pair_ends + 1] = True
    starts = np.flatnonzero(is_start[:-1])
    rows = np.searchsorted(offsets, starts, side="right") - 1
    next_end = np.searchsorted(pair_ends, starts)
    ends = np.minimum(np.append(pair_ends, offsets[-1])[next_end], offsets[rows + 1])
    name_ends = np.flatnonzero(data == _NAME_END)
    first = np.searchsorted(name_ends, starts)
    name_end = np.append(name_ends, offsets[-1])[first]
    return starts, name_end, ends, rows


def _short_slices(data: np.ndarray, at: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """The slices [at, at + lengths) of `data` as a string array; the slices must come in
    order and not overlap (a record's names, its values).  Their bytes are picked out by one
    mask over `data`, made by repeating False for each gap and True for each slice: a step
    per slice and one pass over the bytes, cheaper for values of a few bytes than views
    (`_slices`, a copy per value) or an index per byte (passes over 8-byte positions)."""
    n = len(at)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    runs = np.empty(2 * n, dtype=np.int64)  # gap, slice, gap, slice …
    runs[1::2] = lengths
    runs[0:1] = at[:1]
    runs[2::2] = at[1:] - (at[:-1] + lengths[:-1])
    inside = np.repeat(np.tile(np.array([False, True]), n), runs)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data[: len(inside)][inside])]
    )


def _value_of(pairs: _Pairs, named: np.ndarray, n: int) -> pa.Array:
    """Per record, the value of the pairs `named` selects (null where absent; the last one
    wins, as in the dict the per-record decoder builds)."""
    hits = np.flatnonzero(named)
    where = np.full(n, -1, dtype=np.int64)
    where[pairs.rows[hits]] = hits
    indices = pa.Array.from_buffers(pa.int64(), n, [_bitmap(where >= 0), pa.py_buffer(where)])
    return pairs.values.take(indices)


# The decode builds no Arrow array from a Python list or a mask and converts no booleans with
# `to_numpy`: pyarrow does each through pandas, whose import is a slow first step for every
# fresh Spark worker (`tests/spark/test_arrow_decode.py::test_decoding_does_not_import_pandas`).
# Booleans cross through their bits, masks go in as validity buffers, and strings as buffers.


def _strings(values: list[str]) -> pa.Array:
    """Python strings as a string array, from its buffers."""
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), data])


def _numbers(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """A numpy array of `kind`'s width as an Arrow array without nulls, on its buffer."""
    if values.dtype.itemsize * 8 != kind.bit_width:
        raise TypeError(f"{values.dtype} is not {kind}")
    data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(kind, len(values), [None, data])


def _bitmap(values: np.ndarray) -> pa.Buffer:
    """A numpy boolean array packed into Arrow's bit layout (a validity or boolean buffer)."""
    return pa.py_buffer(np.packbits(values, bitorder="little"))


def _bool_array(values: np.ndarray) -> pa.Array:
    """A numpy boolean array as an Arrow one."""
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, _bitmap(values)])


def _bools(array: pa.BooleanArray) -> np.ndarray:
    """A boolean array without nulls as numpy, unpacked from its bits."""
    bits = np.frombuffer(array.buffers()[1], np.uint8)
    count = array.offset + len(array)
    return np.unpackbits(bits, count=count, bitorder="little")[array.offset :].view(bool)


def decode_to_batch(
    body: bytes, topic: str, broker: str, end: int, tags: frozenset[str] | None
) -> pa.RecordBatch | None:
    """The records of a pull answer with queue offset < `end` (and, with `tags`, whose tag is
    one of them) as one batch; None when a record needs the per-record decoder."""
    schema = arrow_schema()
    buf = np.frombuffer(body, dtype=np.uint8)
    starts = record_starts(body)
    n = len(starts)
    if np.any(starts + POS_BODY_V4 > len(buf)):
        raise ProtocolError("a record is shorter than its fixed fields")
    fixed = _every_byte(body, _FIXED_BYTES)[starts].view(_FIXED)
    if np.any(fixed["sys_flag"] & _SLOW_FLAGS):
        return None
    magic = fixed["magic"]
    if np.any((magic != MAGIC_V1) & (magic != MAGIC_V2)):
        raise ProtocolError("bad message magic in a pull answer")
    size = fixed["size"].astype(np.int64)
    body_len = fixed["body_len"].astype(np.int64)
    body_at = starts + POS_BODY_V4
    topic_at = body_at + body_len
    v2 = magic == MAGIC_V2
    topic_len = np.where(v2, _gather(body, topic_at, ">i2"), buf[topic_at].astype(np.int64))
    topic_at = topic_at + np.where(v2, 2, 1)
    props_len_at = topic_at + topic_len
    props_len = _gather(body, props_len_at, ">i2")
    props_at = props_len_at + 2
    if np.any(props_at + props_len != starts + size) or np.any(body_len < 0):
        raise ProtocolError("a record's parts do not add up to its size")
    first_topic = bytes(buf[topic_at[0] : topic_at[0] + topic_len[0]]).decode()
    if first_topic != topic or np.any(topic_len != topic_len[0]):
        return None

    props = _slices(body, buf, props_at, props_len, pa.string())
    props.validate(full=True)
    pairs = _split_properties(props)
    hidden = {name: pairs.named(name) for name in HIDDEN_PROPERTIES}
    tag_col = _value_of(pairs, hidden[Prop.TAGS], n)
    keys_col = _value_of(pairs, hidden[Prop.KEYS], n)
    uniq = _value_of(pairs, hidden[Prop.UNIQ_KEY], n)
    phys = fixed["phys"].astype(np.int64)
    if uniq.null_count:
        missing = np.flatnonzero(_bools(uniq.is_null()))
        ids = uniq.to_pylist()
        for i in missing:
            at = int(starts[i]) + POS_STOREHOST_V4
            host, port = body[at : at + 4], _I32.unpack_from(body, at + 4)[0]
            ids[i] = offset_msg_id_from_bytes(host, port, int(phys[i]))
        uniq = _strings(ids)
    user = ~np.logical_or.reduce(list(hidden.values()))
    counts = np.bincount(pairs.rows[user], minlength=n)
    map_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=map_offsets[1:])
    properties = pa.MapArray.from_arrays(
        _numbers(map_offsets, pa.int32()),
        pairs.names(user),
        pairs.values.filter(_bool_array(user)),
        type=schema.field("properties").type,
    )
    queue_offset = fixed["queue_offset"].astype(np.int64)
    columns = [
        pa.repeat(_strings([topic])[0], n),
        pa.repeat(_strings([broker])[0], n),
        _numbers(fixed["queue_id"].astype(np.int32), pa.int32()),
        _numbers(queue_offset, pa.int64()),
        uniq,
        keys_col,
        tag_col,
        _slices(body, buf, body_at, body_len, pa.binary()),
        _ms_to_timestamps(fixed["born_ts"].astype(np.int64)),
        _ms_to_timestamps(fixed["store_ts"].astype(np.int64)),
        _numbers(fixed["reconsume"].astype(np.int32), pa.int32()),
        properties,
    ]
    batch = pa.RecordBatch.from_arrays(columns, schema=schema)
    keep = queue_offset < end
    if tags is not None:
        keep &= _bools(pc.is_in(tag_col, value_set=_strings(sorted(tags))))
    return batch if keep.all() else batch.filter(_bool_array(keep))


def messages_to_batch(messages: list[MessageExt], broker: str) -> pa.RecordBatch:
    """One record batch of `messages`, all from `broker`, in the source schema."""
    schema = arrow_schema()
    n = len(messages)
    map_offsets = [0]
    map_keys: list[str] = []
    map_values: list[str] = []
    msg_ids: list[str] = []
    keys: list[str | None] = []
    tags: list[str | None] = []
    for m in messages:
        props = m.properties
        msg_ids.append(props.get(Prop.UNIQ_KEY) or m.offset_msg_id)
        keys.append(props.get(Prop.KEYS))
        tags.append(props.get(Prop.TAGS))
        for k, v in props.items():
            if k not in HIDDEN_PROPERTIES:
                map_keys.append(k)
                map_values.append(v)
        map_offsets.append(len(map_keys))
    properties = pa.MapArray.from_arrays(
        pa.array(map_offsets, pa.int32()),
        pa.array(map_keys, pa.string()),
        pa.array(map_values, pa.string()),
        type=schema.field("properties").type,
    )
    columns = [
        pa.array([m.topic for m in messages], pa.string()),
        pa.repeat(pa.scalar(broker, pa.string()), n) if n else pa.array([], pa.string()),
        pa.array([m.queue_id for m in messages], pa.int32()),
        pa.array([m.queue_offset for m in messages], pa.int64()),
        pa.array(msg_ids, pa.string()),
        pa.array(keys, pa.string()),
        pa.array(tags, pa.string()),
        pa.array([m.body for m in messages], pa.binary()),
        _ms_to_timestamps([m.born_timestamp for m in messages]),
        _ms_to_timestamps([m.store_timestamp for m in messages]),
        pa.array([m.reconsume_times for m in messages], pa.int32()),
        properties,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# ---------------------------------------------------------------------------- the sink side


@dataclass(frozen=True, slots=True)
class OutgoingRow:
    """One message to publish, as read from a sink row."""

    topic: str
    body: bytes
    tags: str | None
    keys: str | None
    properties: dict[str, str] | None


class SinkSchemaError(ValueError):
    """The DataFrame given to the sink lacks a usable column (the caller's mistake)."""


SINK_COLUMNS = ("topic", "body", "tags", "keys", "properties")


def check_sink_schema(schema: StructType, default_topic: str | None) -> None:
    """Fail before any task runs when the DataFrame cannot be published."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "body" not in fields:
        raise SinkSchemaError("the longboat sink needs a 'body' column (binary or string)")
    if not isinstance(fields["body"], BinaryType | StringType):
        raise SinkSchemaError(f"column 'body' must be binary or string, not {fields['body']}")
    for name in ("topic", "tags", "keys"):
        if name in fields and not isinstance(fields[name], StringType):
            raise SinkSchemaError(f"column '{name}' must be a string, not {fields[name]}")
    if "properties" in fields and fields["properties"] != MapType(StringType(), StringType()):
        raise SinkSchemaError("column 'properties' must be map<string,string>")
    if "topic" not in fields and default_topic is None:
        raise SinkSchemaError("give a 'topic' column or the 'topic' option")


def rows_of(batches: Iterable[pa.RecordBatch], default_topic: str | None) -> Iterator[OutgoingRow]:
    """The messages in Arrow batches handed to a sink; extra columns are ignored."""
    for batch in batches:
        names = batch.schema.names
        n = batch.num_rows
        none = [None] * n
        col = {
            name: batch.column(names.index(name)).to_pylist()
            for name in SINK_COLUMNS
            if name in names
        }
        topics = col.get("topic") or [default_topic] * n
        bodies = col["body"]
        tags = col.get("tags") or none
        keys = col.get("keys") or none
        props = col.get("properties") or none
        for i in range(n):
            body = bodies[i]
            if body is None:
                raise SinkSchemaError(f"row {i} of a sink batch has a null body")
            topic = topics[i] or default_topic
            if topic is None:
                raise SinkSchemaError(f"row {i} of a sink batch has no topic")
            p = props[i]
            yield OutgoingRow(
                topic=topic,
                body=body.encode() if isinstance(body, str) else bytes(body),
                tags=tags[i],
                keys=keys[i],
                properties=dict(p) if p else None,
            )
