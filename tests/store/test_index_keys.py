"""The key index hashes a message's keys from its stored property bytes (appends) or from its
decoded properties (recovery, replication): both readings give the same hashes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.properties import string_to_properties
from longboat.store.index.keys import (
    encoded_batch_hashes,
    encoded_index_hashes,
    index_hashes,
    key_hash,
    topic_seed,
)

# Property strings around the two names the index reads: look-alike names, repeated and empty
# values, keys with runs of spaces, stray separators.
_SEGMENT = st.builds(
    lambda name, sep, value: f"{name}{sep}{value}",
    st.sampled_from(["KEYS", "UNIQ_KEY", "XKEYS", "KEY", "TAGS", ""]),
    st.sampled_from(["\x01", "", "\x01\x01"]),
    st.text(st.sampled_from("ab \x01é"), max_size=8),
)
_TEXT = st.lists(_SEGMENT, max_size=6).map("\x02".join)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, topic=st.sampled_from(["T", "%RETRY%g", "Topic-1"]))
def test_stored_bytes_and_decoded_properties_give_the_same_hashes(text: str, topic: str) -> None:
    seed = topic_seed(topic)
    decoded = index_hashes(seed, string_to_properties(text))
    assert encoded_index_hashes(seed, text.encode()) == decoded


def test_each_key_and_the_unique_key_are_hashed_with_the_topic() -> None:
    seed = topic_seed("T")
    props = b"KEYS\x01a  b\x02UNIQ_KEY\x01u1\x02TAGS\x01t"
    assert encoded_index_hashes(seed, props) == tuple(key_hash(seed, k) for k in ("a", "b", "u1"))
    assert encoded_index_hashes(seed, b"TAGS\x01t") == ()


# Batches as producers send them (one UNIQ_KEY, often last) mixed with the odd cases the
# batch reading must hand to the per-message path: KEYS, a repeated or empty UNIQ_KEY, a
# UNIQ_KEY first, its marker inside another value.
_MESSAGE = st.one_of(
    st.builds("TAGS\x01t\x02WAIT\x01true\x02UNIQ_KEY\x01{}".format, st.text("0123AF", max_size=6)),
    st.builds("UNIQ_KEY\x01{}\x02TAGS\x01t".format, st.text("ab", max_size=3)),
    st.sampled_from(["UNIQ_KEY\x01a\x02UNIQ_KEY\x01b", "TAGS\x01UNIQ_KEY\x01x", "KEYS\x01k j"]),
    _TEXT,
)


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(_MESSAGE, min_size=1, max_size=12))
def test_a_batch_gives_each_messages_hashes_in_order(texts: list[str]) -> None:
    seed = topic_seed("T")
    props = [t.encode() for t in texts]
    offsets = [1000 + 10 * i for i in range(len(props))]
    expected = [(h, o) for p, o in zip(props, offsets, strict=True)
                for h in encoded_index_hashes(seed, p)]  # fmt: skip
    hashes, owners = encoded_batch_hashes(seed, props, offsets)
    assert list(zip(hashes, owners, strict=True)) == expected
