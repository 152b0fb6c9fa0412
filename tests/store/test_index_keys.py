"""The key index hashes a message's keys from its stored property bytes (appends) or from its
decoded properties (recovery, replication): both readings give the same hashes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.properties import string_to_properties
from longboat.store.index import key_hash, topic_seed
from longboat.store.index_keys import encoded_index_hashes, index_hashes

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
