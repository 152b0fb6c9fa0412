"""The columnar decoder of pull answers agrees with the per-record decoder, field by field,
on the records where they could disagree: odd property strings (no trailing separator, empty
names or values, pairs without a value, a value holding the name separator, non-ASCII text)
and bodies around the 12-byte boundary of Arrow's inline views.  No Spark session: the
decoder is plain pyarrow and numpy."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.message import decode_records, encode_record
from longboat.spark.arrow import (
    _alternating_pairs,
    _short_slices,
    decode_to_batch,
    messages_to_batch,
)

TOPIC = "decode-topic"
BROKER = "broker-a"

PROPERTY_STRINGS = [
    "",
    "TAGS\x01t1",
    "TAGS\x01t1\x02",
    "TAGS\x01t1\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01ABCDEF\x02",
    "\x02\x02TAGS\x01t2\x02\x02",
    "novalue\x02TAGS\x01t3",
    "a\x01\x02b\x01c",
    "\x01orphan\x02b\x01c\x02",
    "a\x01x\x01y\x02KEYS\x01k",
    "名前\x01値 ✓\x02TAGS\x01标签\x02",
    "CLUSTER\x01DefaultCluster\x02WAIT\x01true\x02user\x01v\x02",
    "\x02",
    "\x01",
]
# What producers write: in every string the separators alternate \x01, \x02, \x01 … (empty
# names or values allowed); a batch of only these takes the decoder's faster cut.
ALTERNATING = [
    "",
    "TAGS\x01t1",
    "TAGS\x01t1\x02",
    "TAGS\x01t1\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01ABCDEF\x02",
    "a\x01\x02b\x01c",
    "\x01orphan\x02b\x01c\x02",
    "名前\x01値 ✓\x02TAGS\x01标签\x02",
    "CLUSTER\x01DefaultCluster\x02WAIT\x01true\x02user\x01v\x02",
    "MIN_OFFSET\x013\x02MIN_OFFSETS\x01kept\x02MAX_OFFSEt\x01kept\x02MAX_OFFSET\x019",
    "\x01",
]
BODIES = [b"", b"x", b"twelve bytes", b"thirteen byte", b"b" * 100, bytes(range(256))]


def _records(strings: list[str] = PROPERTY_STRINGS) -> bytes:
    records = []
    offset = 0
    for i, props in enumerate(strings * 2):
        body = BODIES[i % len(BODIES)]
        record = encode_record(
            topic=TOPIC.encode(),
            body=body,
            properties=props.encode(),
            queue_id=3,
            flag=0,
            queue_offset=i,
            commit_log_offset=offset,
            sys_flag=0,
            born_timestamp=1_700_000_000_000 + i,
            born_host=bytes([127, 0, 0, 1]),
            born_port=5000 + i,
            store_timestamp=1_700_000_000_500 + i,
            store_host=bytes([10, 0, 0, 2]),
            store_port=10911,
            reconsume_times=i % 3,
        )
        records.append(record)
        offset += len(record)
    return b"".join(records)


def _rows(batch: pa.RecordBatch) -> list[dict[str, object]]:
    rows = batch.to_pylist()
    for row in rows:
        # The per-record decoder reads properties into a dict (a repeated name keeps its
        # last value, in first-seen order); compare as such.
        row["properties"] = dict(row["properties"])
    return rows


@pytest.mark.parametrize("strings", [PROPERTY_STRINGS, ALTERNATING], ids=["any", "alternating"])
def test_columnar_decode_matches_the_per_record_decoder(strings: list[str]) -> None:
    body = _records(strings)
    columnar = decode_to_batch(body, TOPIC, BROKER, end=1 << 62, tags=None)
    assert columnar is not None
    expected = messages_to_batch(decode_records(body), BROKER)
    assert columnar.schema == expected.schema
    assert _rows(columnar) == _rows(expected)


def test_the_properties_columns_read_as_the_client_reads_them() -> None:
    rows = _rows(decode_to_batch(_records(), TOPIC, BROKER, end=1 << 62, tags=None))
    by_props = dict(zip(PROPERTY_STRINGS, rows, strict=False))
    assert by_props["TAGS\x01t1"]["tags"] == "t1"
    assert by_props["\x02\x02TAGS\x01t2\x02\x02"]["tags"] == "t2"
    assert by_props["novalue\x02TAGS\x01t3"]["properties"] == {}
    assert by_props["a\x01\x02b\x01c"]["properties"] == {"b": "c"}
    assert by_props["a\x01x\x01y\x02KEYS\x01k"]["properties"] == {"a": "x\x01y"}
    assert by_props["a\x01x\x01y\x02KEYS\x01k"]["keys"] == "k"
    assert by_props["名前\x01値 ✓\x02TAGS\x01标签\x02"]["properties"] == {"名前": "値 ✓"}
    assert by_props["TAGS\x01t1\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01ABCDEF\x02"]["msg_id"] == "ABCDEF"
    assert by_props[""]["tags"] is None and by_props[""]["properties"] == {}


def test_only_strings_whose_separators_alternate_take_the_faster_cut() -> None:
    for strings, alternating in ((ALTERNATING, True), (PROPERTY_STRINGS, False)):
        props = pa.array(strings, pa.string())
        offsets = np.frombuffer(props.buffers()[1], np.int32).astype(np.int64)
        data = np.frombuffer(props.buffers()[2], np.uint8)[: offsets[-1]]
        assert (_alternating_pairs(data, offsets) is not None) is alternating


def test_hidden_names_are_matched_on_every_byte() -> None:
    rows = _rows(decode_to_batch(_records(ALTERNATING), TOPIC, BROKER, end=1 << 62, tags=None))
    by_props = dict(zip(ALTERNATING, rows, strict=False))
    last = ALTERNATING[-2]  # MIN_OFFSET and MAX_OFFSET are hidden, their near-misses are not
    assert by_props[last]["properties"] == {"MIN_OFFSETS": "kept", "MAX_OFFSEt": "kept"}


@pytest.mark.parametrize("end", [0, 5, 17])
def test_records_at_or_past_the_range_end_are_left_out(end: int) -> None:
    batch = decode_to_batch(_records(), TOPIC, BROKER, end=end, tags=None)
    assert batch is not None
    assert batch.column("queue_offset").to_pylist() == list(range(end))


def test_a_tag_filter_keeps_only_those_tags() -> None:
    batch = decode_to_batch(_records(), TOPIC, BROKER, end=1 << 62, tags=frozenset({"t1", "t3"}))
    assert batch is not None
    assert set(batch.column("tags").to_pylist()) == {"t1", "t3"}
    assert batch.num_rows == 2 * 4  # four of the strings carry one of them; each is used twice


# Property strings as producers write them (names and values free of separators, now and then
# a hidden name or one a byte away from it), and arbitrary ones (separators anywhere).
_TEXT = st.text(st.characters(blacklist_characters="\x01\x02", codec="utf-8"), max_size=12)
_NAMES = _TEXT | st.sampled_from(
    ["TAGS", "KEYS", "UNIQ_KEY", "MIN_OFFSET", "MAX_OFFSET", "TAGs", "KEYSX", "UNIQ_KEy",
     "MIN_OFFSEt", "MAX_OFFSET2", "a"]
)  # fmt: skip
_WRITTEN = st.builds(
    lambda pairs, trailing: "\x02".join(f"{k}\x01{v}" for k, v in pairs) + trailing,
    st.lists(st.tuples(_NAMES, _TEXT), max_size=6),
    st.sampled_from(["", "\x02"]),
)
_ARBITRARY = st.lists(st.sampled_from(["\x01", "\x02", "a", "é", "TAGS", "KEYS"]), max_size=20).map(
    "".join
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_WRITTEN, min_size=1, max_size=12) | st.lists(_WRITTEN | _ARBITRARY, min_size=1))
def test_any_property_strings_decode_as_the_per_record_decoder_reads_them(
    strings: list[str],
) -> None:
    body = _records(strings)
    columnar = decode_to_batch(body, TOPIC, BROKER, end=1 << 62, tags=None)
    assert columnar is not None
    assert _rows(columnar) == _rows(messages_to_batch(decode_records(body), BROKER))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_short_slices_pick_out_exactly_the_bytes_of_each_slice(data: st.DataObject) -> None:
    """In order and not overlapping, but otherwise anything: empty slices, slices that end
    where the next begins, one at the very end of the buffer."""
    text = data.draw(st.binary(max_size=40).filter(lambda b: b.isascii()))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=16)))
    pairs = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2)]
    if data.draw(st.booleans()):  # adjacent slices: every cut ends one and starts the next
        pairs = list(itertools.pairwise(cuts))
    at = np.array([a for a, _ in pairs], dtype=np.int64)
    lengths = np.array([b - a for a, b in pairs], dtype=np.int64)
    got = _short_slices(np.frombuffer(text, np.uint8), at, lengths)
    assert got.to_pylist() == [text[a:b].decode() for a, b in pairs]


def test_decoding_does_not_import_pandas() -> None:
    """A fresh Spark worker's first decode would otherwise pay for importing pandas (pyarrow
    goes through it for masks, Python lists and booleans to numpy); the decode needs none of
    it, with a tag filter or with records that lack a UNIQ_KEY."""
    script = (
        "import sys\n"
        "from tests.spark.test_arrow_decode import BROKER, TOPIC, _records\n"
        "from longboat.spark.arrow import decode_to_batch\n"
        "batch = decode_to_batch(_records(), TOPIC, BROKER, end=1 << 62, tags=None)\n"
        "assert batch is not None and batch.num_rows and batch.column('tags').null_count\n"
        "kept = decode_to_batch(_records(), TOPIC, BROKER, end=1 << 62, tags=frozenset({'t1'}))\n"
        "assert kept is not None and set(kept.column('tags').to_pylist()) == {'t1'}\n"
        "print('pandas' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"
