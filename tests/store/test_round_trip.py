"""A million small messages across many segment rollovers, several topics and queues: every
one read back intact and in order, by queue offset and by commit-log offset, before and after
a restart."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from longboat.protocol.message import decode_records
from longboat.store import GetStatus, MessageInner, MessageStore

from .helpers import small_config

TOTAL = 1_000_000
TOPICS = ("RoundA", "RoundB", "RoundC")
QUEUES = 4
BATCH = 1000


def body(topic_index: int, queue_id: int, n: int) -> bytes:
    return b"%d/%d/%d" % (topic_index, queue_id, n)


@pytest.mark.slow
def test_a_million_messages_round_trip(store_dir: Path) -> None:
    cfg = small_config(
        store_dir,
        commit_log_segment_size=4 * 1024 * 1024,
        consume_queue_entries_per_file=20_000,
        index_hash_slots=100_000,
        index_max_entries=400_000,
        max_transfer_count=BATCH,
        max_transfer_bytes=1 << 30,
    )
    queues = [(t, q) for t in range(len(TOPICS)) for q in range(QUEUES)]
    per_queue = TOTAL // len(queues) // BATCH * BATCH
    physical: dict[tuple[int, int], array[int]] = {key: array("q") for key in queues}
    with MessageStore(cfg) as store:
        for start in range(0, per_queue, BATCH):
            for t, q in queues:
                batch = [
                    MessageInner(TOPICS[t], q, body(t, q, n), {"TAGS": f"tag{n % 3}"})
                    for n in range(start, start + BATCH)
                ]
                result = store.put_messages(batch)
                assert result.ok, result.error
                physical[(t, q)].extend(r.commit_log_offset for r in result.records)
        assert store.max_physical_offset > 25 * cfg.commit_log_segment_size  # many rollovers
        check_all(store, queues, per_queue, physical)
    with MessageStore(cfg) as store:
        assert store.last_recovery is not None and store.last_recovery.records == 0
        check_all(store, queues, per_queue, physical)


def check_all(
    store: MessageStore,
    queues: list[tuple[int, int]],
    per_queue: int,
    physical: dict[tuple[int, int], array[int]],
) -> None:
    for t, q in queues:
        topic = TOPICS[t]
        assert (store.min_offset(topic, q), store.max_offset(topic, q)) == (0, per_queue)
        offset = 0
        phys = physical[(t, q)]
        while offset < per_queue:
            page = store.get_messages(topic, q, offset, BATCH)
            assert page.status is GetStatus.FOUND
            assert page.queue_offsets[0] == offset
            msgs = decode_records(b"".join(page.records))
            for i, (raw, msg) in enumerate(zip(page.records, msgs, strict=True)):
                n = offset + i
                assert msg.body == body(t, q, n)
                assert (msg.topic, msg.queue_id, msg.queue_offset) == (topic, q, n)
                assert msg.commit_log_offset == phys[n]
                assert store.read_record(phys[n]) == raw
            offset = page.next_begin_offset
        assert offset == per_queue
