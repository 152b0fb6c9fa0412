"""Admitting a batch that keeps its property bytes (the broker's SEND_BATCH_MESSAGE path): each
message's tag hash read from its bytes agrees with its parsed properties, and a bad batch is
refused, for its first bad message, before anything is written."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.message import MAX_PROPERTIES_BYTES
from longboat.protocol.properties import string_to_properties
from longboat.protocol.tags import tags_code
from longboat.store import EncodedBatch, MessageStore, PutStatus
from longboat.store.admission import Admission, Admitted

from .helpers import small_config

# Property strings as producers write them, and odd ones: no tag, a tag twice, an empty tag,
# a look-alike name, TAGS inside another value.
_PROPS = st.one_of(
    st.builds(
        "TAGS\x01{}\x02UNIQ_KEY\x01u{}".format, st.sampled_from(["A", "B", "é"]), st.integers(0, 9)
    ),
    st.sampled_from(["UNIQ_KEY\x01u", "TAGS\x01A\x02TAGS\x01B", "TAGS\x01\x02TAGS\x01C",
                     "XTAGS\x01A", "K\x01TAGS\x01A", "", "TAGS\x01A"]),
)  # fmt: skip


def batch(props: list[bytes], body: bytes = b"x") -> EncodedBatch:
    return EncodedBatch(topic="T", queue_id=0, messages=[(body, p, 0) for p in props])


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_PROPS, min_size=1, max_size=10))
def test_each_message_gets_the_tag_hash_its_parsed_properties_give(texts: list[str]) -> None:
    admission = Admission(1024)
    expected = [tags_code(string_to_properties(t).get("TAGS") or "") for t in texts]
    for _ in range(2):  # the second time every tag is in the admission's cache
        admitted = admission.admit_encoded(batch([t.encode() for t in texts]))
        assert type(admitted) is Admitted
        assert admitted.tags_codes == [code or 0 for code in expected]
        assert [m[1] for m in admitted.messages] == [t.encode() for t in texts]


def test_a_refused_batch_is_refused_for_its_first_bad_message(tmp_path: Path) -> None:
    good = b"TAGS\x01A"
    big_props = b"P\x01" + b"p" * MAX_PROPERTIES_BYTES
    admission = Admission(100)
    refusals = [
        ([(b"x", good, 0), (b"y" * 101, good, 0), (b"x", big_props, 0)], PutStatus.MESSAGE_ILLEGAL,
         "message body of 101 bytes exceeds maxMessageSize 100"),
        ([(b"x", good, 0), (b"x", big_props, 0), (b"y" * 101, good, 0)],
         PutStatus.PROPERTIES_SIZE_EXCEEDED, f"exceed {MAX_PROPERTIES_BYTES}"),
        ([(b"x", b"TAGS\x01\xff", 0), (b"y" * 101, good, 0)], PutStatus.MESSAGE_ILLEGAL,
         "message properties are not UTF-8"),
    ]  # fmt: skip
    for messages, status, error in refusals:
        refused = admission.admit_encoded(EncodedBatch(topic="T", queue_id=0, messages=messages))
        assert not isinstance(refused, Admitted)
        assert refused.status is status and error in (refused.error or "")
    with MessageStore(small_config(tmp_path, max_message_size=100)) as store:
        for messages, status, _ in refusals:
            put = store.put_encoded_batch(EncodedBatch(topic="T", queue_id=0, messages=messages))
            assert put.status is status
        assert store.max_offset("T", 0) == 0 and store.max_physical_offset == 0
