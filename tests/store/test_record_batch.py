"""The store's batch encoder writes exactly what `encode_record` writes, record by record."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.message import decode_records, encode_record, encode_record_batch

# The order of BatchRecordFields, named as encode_record names them.
ITEM_FIELDS = (
    "body",
    "properties",
    "flag",
    "sys_flag",
    "born_timestamp",
    "born_host",
    "born_port",
    "reconsume_times",
    "prepared_transaction_offset",
)
hosts = st.sampled_from([b"\x7f\x00\x00\x01", b"\x0a\x01\x02\x03", bytes(range(16))])
ints = st.integers(min_value=0, max_value=2**31 - 1)
longs = st.integers(min_value=0, max_value=2**62)
items = st.tuples(
    st.binary(max_size=300),
    st.text(max_size=100).map(str.encode),
    ints,
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
    batch=st.lists(items, min_size=1, max_size=6),
)
def test_batch_encoding_equals_record_encoding(
    topic: bytes,
    queue_id: int,
    start: int,
    store_ts: int,
    store_host: bytes,
    store_port: int,
    batch: list,
) -> None:
    data, sizes = encode_record_batch(
        topic=topic,
        queue_id=queue_id,
        commit_log_offset=start,
        store_timestamp=store_ts,
        store_host=store_host,
        store_port=store_port,
        items=batch,
        queue_offsets=list(range(7, 7 + len(batch))),
    )
    expected = []
    phys = start
    for qoff, item in enumerate(batch, start=7):
        record = encode_record(
            topic=topic,
            queue_id=queue_id,
            commit_log_offset=phys,
            store_timestamp=store_ts,
            store_host=store_host,
            store_port=store_port,
            queue_offset=qoff,
            **dict(zip(ITEM_FIELDS, item, strict=True)),
        )
        expected.append(record)
        phys += len(record)
    assert data == b"".join(expected)
    assert sizes == [len(r) for r in expected]
    assert [m.commit_log_offset for m in decode_records(data)] == [
        start + sum(sizes[:i]) for i in range(len(sizes))
    ]
