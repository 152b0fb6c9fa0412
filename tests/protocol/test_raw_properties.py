"""Reading properties straight from their bytes (the broker's batch path) gives the same answer
as parsing them, for any property string, well-formed or not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.batch import join_batch, split_batch
from longboat.protocol.properties import (
    RawProperties,
    property_marker,
    raw_property,
    raw_property_each,
    string_to_properties,
    with_appended,
)

_NAMES = ["TAGS", "KEYS", "UNIQ_KEY", "XTAGS", "TAG", ""]
# Segments made of likely names, separators and short values: look-alikes, empty values,
# repeated names, stray separators.
_SEGMENT = st.builds(
    lambda name, sep, value: f"{name}{sep}{value}",
    st.sampled_from(_NAMES),
    st.sampled_from(["\x01", "", "\x01\x01"]),
    st.text(st.sampled_from("ab \x01TAGS"), max_size=6),
)
_TEXT = st.lists(_SEGMENT, max_size=6).map("\x02".join) | st.text(
    st.sampled_from("TAGSKEY_\x01\x02ab"), max_size=30
)


@settings(max_examples=400, deadline=None)
@given(text=_TEXT, name=st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY"]))
def test_raw_property_agrees_with_the_parser(text: str, name: str) -> None:
    expected = string_to_properties(text).get(name)
    found = raw_property(text.encode(), property_marker(name))
    assert (found.decode() if found is not None else None) == expected


def test_raw_property_cases() -> None:
    tags = property_marker("TAGS")
    assert raw_property(b"TAGS\x01a\x02KEYS\x01k", tags) == b"a"
    assert raw_property(b"KEYS\x01k\x02TAGS\x01a", tags) == b"a"
    assert raw_property(b"XTAGS\x01a", tags) is None
    assert raw_property(b"K\x01TAGS\x01a", tags) is None  # inside K's value
    assert raw_property(b"TAGS\x01a\x02TAGS\x01b", tags) == b"b"  # the last wins
    assert raw_property(b"TAGS\x01a\x02TAGS\x01", tags) == b"a"  # an empty value is skipped


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=6), name=st.sampled_from(["TAGS", "UNIQ_KEY"]))
def test_a_batch_read_at_once_agrees_with_each_message_read_alone(
    texts: list[str], name: str
) -> None:
    """`raw_property_each` answers only when every message has the name once, with a value,
    and then what `raw_property` reads from each."""
    props = [t.encode() for t in texts]
    marker = property_marker(name)
    each = raw_property_each(props, b"\x02".join(props), marker)
    alone = [raw_property(p, marker) for p in props]
    if each is not None:
        assert each == alone
    if all(p.count(marker) == 1 and (p.startswith(marker) or b"\x02" + marker in p)
           and v for p, v in zip(props, alone, strict=True)):  # fmt: skip
        assert each == alone


def test_a_batch_read_at_once_cases() -> None:
    tags = property_marker("TAGS")
    batch = [b"TAGS\x01a\x02UNIQ_KEY\x01u1", b"UNIQ_KEY\x01u2\x02TAGS\x01b"]
    assert raw_property_each(batch, b"\x02".join(batch), tags) == [b"a", b"b"]
    for odd in ([b"TAGS\x01a", b"UNIQ_KEY\x01u"], [b"TAGS\x01a", b"TAGS\x01"],
                [b"TAGS\x01a", b"K\x01TAGS\x01b"],
                [b"TAGS\x01a\x02TAGS\x01b", b"TAGS\x01c"]):  # fmt: skip
        assert raw_property_each(odd, b"\x02".join(odd), tags) is None
    # A lone message is read as `raw_property` reads it: the last value wins, none is None.
    lone = b"TAGS\x01a\x02TAGS\x01b"
    assert raw_property_each([lone], lone, tags) == [b"b"]
    assert raw_property_each([b"KEYS\x01k"], b"KEYS\x01k", tags) is None


@settings(max_examples=100, deadline=None)
@given(
    elements=st.lists(
        st.tuples(st.binary(max_size=50), st.binary(max_size=50), st.integers(-(2**31), 2**31 - 1)),
        max_size=5,
    )
)
def test_split_batch_reverses_join_batch(elements: list[tuple[bytes, bytes, int]]) -> None:
    assert split_batch(join_batch(elements)) == elements
    assert split_batch(memoryview(join_batch(elements))) == elements


@settings(max_examples=100, deadline=None)
@given(
    elements=st.lists(
        st.tuples(st.binary(max_size=20), _TEXT.map(str.encode), st.integers(0, 3)), max_size=5
    ),
    appended=_TEXT.map(str.encode),
)
def test_split_batch_appends_as_each_message_alone(
    elements: list[tuple[bytes, bytes, int]], appended: bytes
) -> None:
    """The broker's properties appended while splitting are those `with_appended` gives
    each message on its own."""
    expected = [(body, with_appended(props, appended), flag) for body, props, flag in elements]
    assert split_batch(join_batch(elements), appended) == expected


def test_with_appended_cases() -> None:
    cluster = b"CLUSTER\x01c"
    assert with_appended(b"TAGS\x01a", cluster) == b"TAGS\x01a\x02CLUSTER\x01c"
    assert with_appended(b"TAGS\x01a\x02", cluster) == b"TAGS\x01a\x02CLUSTER\x01c"
    assert with_appended(b"", cluster) == cluster
    assert split_batch(join_batch([(b"x", b"TAGS\x01a", 0), (b"y", b"", 1)]), cluster) == [
        (b"x", b"TAGS\x01a\x02CLUSTER\x01c", 0),
        (b"y", cluster, 1),
    ]


@settings(max_examples=200, deadline=None)
@given(text=_TEXT)
def test_raw_properties_read_as_the_parsed_mapping(text: str) -> None:
    """What the store hands arrival listeners (parsed only if one looks) reads as the dict."""
    lazy = RawProperties(text.encode())
    parsed = string_to_properties(text)
    assert dict(lazy) == parsed
    assert len(lazy) == len(parsed)
    assert lazy.get("TAGS") == parsed.get("TAGS")
