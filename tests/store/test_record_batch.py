"""The store's batch encoder writes exactly what `encode_record` writes, record by record."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.message import (
    RecordSender,
    decode_records,
    encode_record,
    encode_record_batch,
)
from longboat.store.consume_queue import ENTRY, pack_entries

hosts = st.sampled_from([b"\x7f\x00\x00\x01", b"\x0a\x01\x02\x03", bytes(range(16))])
ints = st.integers(min_value=0, max_value=2**31 - 1)
longs = st.integers(min_value=0, max_value=2**62)
# RecordParts: body, properties, flag.
parts = st.tuples(st.binary(max_size=300), st.text(max_size=100).map(str.encode), ints)
# RecordSender, named as encode_record names its fields.
SENDER_FIELDS = (
    "sys_flag",
    "born_timestamp",
    "born_host",
    "born_port",
    "reconsume_times",
    "prepared_transaction_offset",
)
senders = st.tuples(
    st.integers(min_value=0, max_value=0x7FF),
    longs,
    hosts,
    st.integers(min_value=0, max_value=65535),
    st.integers(min_value=0, max_value=16),
    longs,
)


@settings(max_examples=150, deadline=None)
@given(
    topic=st.text("abcXYZ_-%|0123", min_size=1, max_size=127).map(str.encode),
    queue_id=ints,
    start=longs,
    store_ts=longs,
    store_host=hosts,
    store_port=st.integers(min_value=0, max_value=65535),
    messages=st.lists(parts, min_size=1, max_size=6),
    sender_list=st.lists(senders, min_size=6, max_size=6),
    shared=st.booleans(),
)
def test_batch_encoding_equals_record_encoding(
    topic: bytes,
    queue_id: int,
    start: int,
    store_ts: int,
    store_host: bytes,
    store_port: int,
    messages: list,
    sender_list: list,
    shared: bool,
) -> None:
    """With one sender for the batch or one per message, any mix of IPv4 and IPv6 hosts."""
    per_message = sender_list[: len(messages)]
    if shared:
        per_message = [sender_list[0]] * len(messages)
    data, sizes = encode_record_batch(
        topic=topic,
        queue_id=queue_id,
        commit_log_offset=start,
        store_timestamp=store_ts,
        store_host=store_host,
        store_port=store_port,
        messages=messages,
        senders=sender_list[0] if shared else per_message,
        queue_offsets=list(range(7, 7 + len(messages))),
    )
    expected = []
    phys = start
    for qoff, ((body, props, flag), sender) in enumerate(
        zip(messages, per_message, strict=True), start=7
    ):
        record = encode_record(
            topic=topic,
            queue_id=queue_id,
            commit_log_offset=phys,
            store_timestamp=store_ts,
            store_host=store_host,
            store_port=store_port,
            queue_offset=qoff,
            body=body,
            properties=props,
            flag=flag,
            **dict(zip(SENDER_FIELDS, sender, strict=True)),
        )
        expected.append(record)
        phys += len(record)
    assert data == b"".join(expected)
    assert sizes == [len(r) for r in expected]
    assert [m.commit_log_offset for m in decode_records(data)] == [
        start + sum(sizes[:i]) for i in range(len(sizes))
    ]


def test_counts_that_disagree_are_refused() -> None:
    sender = (0, 1, b"\x7f\x00\x00\x01", 1, 0, 0)
    one = [(b"body", b"", 0)]

    def encode(senders: RecordSender | list[RecordSender], queue_offsets: list[int]) -> None:
        encode_record_batch(
            topic=b"T",
            queue_id=0,
            commit_log_offset=0,
            store_timestamp=1,
            store_host=b"\x7f\x00\x00\x01",
            store_port=1,
            messages=one,
            senders=senders,
            queue_offsets=queue_offsets,
        )

    with pytest.raises(ValueError, match="queue offsets"):
        encode(sender, [0, 1])
    with pytest.raises(ValueError, match="senders"):
        encode([sender] * 2, [0])


@settings(max_examples=100, deadline=None)
@given(
    entries=st.lists(
        st.tuples(longs, ints, st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        min_size=1,
        max_size=70,
    )
)
def test_queue_entries_of_a_batch_are_each_entry_in_turn(
    entries: list[tuple[int, int, int]],
) -> None:
    """A batch's consume-queue entries, packed in one call, are the bytes of packing each
    entry on its own (commit-log offset, size, tags code)."""
    offsets, sizes, codes = (list(column) for column in zip(*entries, strict=True))
    assert pack_entries(offsets, sizes, codes) == b"".join(ENTRY.pack(*e) for e in entries)
