"""The sink's column-wise encoder writes the bytes the per-message path writes: the same
batch elements, cut into the same sends, with the same UNIQ_KEYs, on rows of every shape it
takes (tags, keys, topics from a column or the option, bodies around the byte limit); and it
hands the rows it does not take back to that path.  No Spark session: plain pyarrow."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.client.errors import ClientUsageError
from longboat.client.producer import Producer
from longboat.protocol.ids import UniqKeyGenerator
from longboat.spark.arrow import SinkSchemaError, rows_of
from longboat.spark.options import WriteOptions
from longboat.spark.sink import (
    _column_sends,
    _message_sends,
    _messages,
    chunks,
    exactly_once_sends,
    unique_key,
)
from longboat.spark.sink_encode import EncodedChunk, encode_chunks, reserved_keys

MAP = pa.map_(pa.string(), pa.string())


def _keys() -> UniqKeyGenerator:
    # Near the counter's wrap, so both paths cross it.
    rng = random.Random(3)
    gen = UniqKeyGenerator("10.0.0.7", now_ms=lambda: 1_780_000_000_000, pid=42, rng=rng)
    gen.reserve(0xFFF0)
    return gen


def per_message(
    batch: pa.RecordBatch, default: str | None, max_count: int, max_bytes: int
) -> list[EncodedChunk]:
    """What the sink sends for `batch` through `Producer.send_batch`, message by message."""
    producer = Producer("encode-test", namesrv_addrs="127.0.0.1:1")
    producer._uniq = _keys()
    out = []
    for chunk in chunks(_messages(rows_of([batch], default)), max_count, max_bytes):
        body, uniqs = producer._batch_body(chunk, chunk[0].topic)
        out.append(EncodedChunk(chunk[0].topic, body, ",".join(uniqs), len(chunk)))
    return out


def column_wise(
    batch: pa.RecordBatch, default: str | None, max_count: int, max_bytes: int
) -> list[EncodedChunk] | None:
    return encode_chunks(
        batch,
        default,
        max_count=max_count,
        max_body_bytes=max_bytes,
        keys=reserved_keys(_keys().reserve),
    )


WORDS = st.text(
    alphabet=st.characters(exclude_characters=" \x00", exclude_categories=["Cs"]),
    min_size=1,
    max_size=6,
)
KEYS = st.one_of(st.none(), st.just(""), st.lists(WORDS, min_size=1, max_size=3).map(" ".join))
TAGS = st.one_of(st.none(), st.just(""), WORDS)
TOPICS = st.one_of(st.none(), st.just(""), st.sampled_from(["t-a", "t-b"]))
# Names of one map are distinct and values present (what the column path takes); now and
# then one row gets an entry the per-message path reads otherwise (`sink_batches`).
ENTRIES = st.lists(
    st.tuples(st.one_of(WORDS, st.sampled_from(["n", "m"])), st.text(max_size=5)),
    max_size=3,
    unique_by=lambda entry: entry[0],
)
ODD_NAMES = {"", "TAGS", "KEYS", "UNIQ_KEY"}


def needs_per_message(batch: pa.RecordBatch) -> bool:
    """What the column path hands back, read row by row: keys `Message.key_list` rewrites,
    or a property map it would not write as given."""
    columns = batch.to_pydict()
    for keys in columns.get("keys", []):
        if keys and keys != " ".join(k for k in keys.split(" ") if k):
            return True
    for entries in columns.get("properties", []):
        names = [name for name, _ in entries or []]
        if len(set(names)) < len(names) or ODD_NAMES & set(names):
            return True
        if any(value is None for _, value in entries or []):
            return True
    return False


@st.composite
def sink_batches(draw: st.DrawFn) -> tuple[pa.RecordBatch, str | None]:
    n = draw(st.integers(1, 30))
    columns: dict[str, pa.Array] = {}
    # Spark hands strings and binaries over as Arrow's 32-bit-offset types unless told to use
    # the large ones; both are taken.
    text = draw(st.sampled_from([pa.string(), pa.large_string()]))
    body_kind = draw(st.sampled_from([pa.binary(), pa.large_binary(), text]))
    values: st.SearchStrategy[bytes | str] = (
        st.binary(min_size=1, max_size=40)
        if body_kind in (pa.binary(), pa.large_binary())
        else st.text(min_size=1, max_size=20)
    )
    columns["body"] = pa.array(draw(st.lists(values, min_size=n, max_size=n)), body_kind)
    if draw(st.booleans()):
        columns["tags"] = pa.array(draw(st.lists(TAGS, min_size=n, max_size=n)), text)
    if draw(st.booleans()):
        columns["keys"] = pa.array(draw(st.lists(KEYS, min_size=n, max_size=n)), text)
    if draw(st.booleans()):
        maps: list[list[tuple[str, str | None]] | None] = draw(
            st.lists(st.one_of(st.none(), ENTRIES), min_size=n, max_size=n)
        )
        if draw(st.integers(0, 4)) == 0:
            row = draw(st.integers(0, n - 1))
            entries = maps[row] or []
            odd: tuple[str, str | None]
            twice = draw(st.booleans())
            if entries and twice:
                odd = (entries[0][0], "again")  # a name twice
            else:
                name = draw(st.sampled_from(["", "TAGS", "KEYS", "UNIQ_KEY", "n"]))
                odd = (name, None if name == "n" else "v")
            maps[row] = [*entries, odd]
        columns["properties"] = pa.array(maps, MAP)
    default: str | None = "t-default"
    if draw(st.booleans()):
        topics = draw(st.lists(TOPICS, min_size=n, max_size=n))
        if draw(st.booleans()) and all(topics):
            default = None
        columns["topic"] = pa.array(topics, text)
    return pa.RecordBatch.from_pydict(columns), default


@settings(max_examples=300, deadline=None)
@given(sink_batches(), st.integers(1, 7), st.integers(1, 120))
def test_a_batch_is_sent_as_the_per_message_path_sends_it(
    case: tuple[pa.RecordBatch, str | None], max_count: int, max_bytes: int
) -> None:
    whole, default = case
    for batch in (whole, whole.slice(1)):  # a slice: its columns start inside their buffers
        encoded = column_wise(batch, default, max_count, max_bytes)
        assert (encoded is None) == needs_per_message(batch)
        if encoded is not None:
            assert encoded == per_message(batch, default, max_count, max_bytes)


@settings(max_examples=200, deadline=None)
@given(sink_batches(), st.integers(1, 7), st.integers(1, 120))
def test_an_exactly_once_micro_batch_is_sent_as_the_per_message_path_sends_it(
    case: tuple[pa.RecordBatch, str | None], max_count: int, max_bytes: int
) -> None:
    """The exactly-once publisher's sends of the batches staged by two tasks: per topic, the
    same chunks with the same deterministic keys, column-wise or message by message."""
    batch, default = case
    opts = WriteOptions("127.0.0.1:1", default, "g", max_count, True, "sink-1", 1.0)
    staged = [batch, batch.slice(1)]
    column = _column_sends("sink-1", 7, staged, opts, max_bytes)
    assert (column is None) == any(needs_per_message(b) for b in staged)
    if column is None:
        return
    producer = Producer("encode-test", namesrv_addrs="127.0.0.1:1")
    expected: dict[str, list[EncodedChunk]] = {}
    for topic, parts in _message_sends("sink-1", 7, staged, opts, max_bytes).items():
        expected[topic] = []
        for part in parts:
            assert isinstance(part, list)
            body, uniqs = producer._batch_body(part, topic)
            expected[topic].append(EncodedChunk(topic, body, ",".join(uniqs), len(part)))
    assert column == expected


def test_staged_batches_that_do_not_concatenate_go_message_by_message() -> None:
    """Batches of two schemas (one with tags, one without) cannot be joined into one column
    batch: the micro-batch is published message by message, with the same keys."""
    opts = WriteOptions("127.0.0.1:1", "t", "g", 10, True, "sink-1", 1.0)
    staged = [
        pa.RecordBatch.from_pydict({"body": pa.array([b"a"]), "tags": pa.array(["x"])}),
        pa.RecordBatch.from_pydict({"body": pa.array([b"b"])}),
    ]
    assert _column_sends("sink-1", 7, staged, opts, 1000) is None
    [part] = exactly_once_sends("sink-1", 7, staged, opts)["t"]
    assert isinstance(part, list)
    assert [m.properties["UNIQ_KEY"] for m in part] == [
        unique_key("sink-1", 7, "t", 0, i) for i in range(2)
    ]


@pytest.mark.parametrize(
    "columns",
    [
        {"properties": pa.array([None, [("k", None)]], MAP)},
        {"properties": pa.array([None, [("", "v")]], MAP)},
        {"properties": pa.array([None, [("TAGS", "v")]], MAP)},
        {"properties": pa.array([[("k", "v"), ("k", "w")], None], MAP)},
        {"keys": pa.array(["a  b", None])},
        {"keys": pa.array([" a", None])},
        {"keys": pa.array(["a ", None])},
        {"keys": pa.array([" ", None])},
        {"tags": pa.array(["t" * 40_000, None])},
    ],
    ids=[
        "null-value",
        "empty-name",
        "a-name-the-producer-sets",
        "a-name-twice",
        "doubled-space",
        "leading-space",
        "trailing-space",
        "space",
        "long",
    ],
)
def test_rows_the_column_path_does_not_take_go_message_by_message(
    columns: dict[str, pa.Array],
) -> None:
    batch = pa.RecordBatch.from_pydict({"body": pa.array([b"a", b"b"]), **columns})
    assert column_wise(batch, "t", 10, 1000) is None


def test_rows_without_a_body_or_a_topic_fail_as_they_do_message_by_message() -> None:
    null_body = pa.RecordBatch.from_pydict({"body": pa.array([b"a", None])})
    with pytest.raises(SinkSchemaError, match="row 1 of a sink batch has a null body"):
        column_wise(null_body, "t", 10, 1000)
    empty = pa.RecordBatch.from_pydict({"body": pa.array([b"a", b""])})
    with pytest.raises(ClientUsageError, match="message body is empty"):
        column_wise(empty, "t", 10, 1000)
    no_topic = pa.RecordBatch.from_pydict(
        {"body": pa.array([b"a", b"b"]), "topic": pa.array(["t", ""])}
    )
    with pytest.raises(SinkSchemaError, match="row 1 of a sink batch has no topic"):
        column_wise(no_topic, None, 10, 1000)
    assert (
        column_wise(pa.RecordBatch.from_pydict({"body": pa.array([], pa.binary())}), "t", 1, 1)
        == []
    )
