"""Store test helpers: small segments so tests cross many files quickly."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from longboat.protocol.message import MessageExt, body_crc, decode_record
from longboat.protocol.sysflags import MessageSysFlag
from longboat.store import GetStatus, MessageInner, MessageStore, StoreConfig


def small_config(root: Path, **overrides: object) -> StoreConfig:
    cfg = StoreConfig(
        root_dir=root,
        commit_log_segment_size=64 * 1024,
        consume_queue_entries_per_file=64,
        index_hash_slots=1024,
        index_max_entries=4096,
        checkpoint_interval_ms=50,
    )
    return dataclasses.replace(cfg, **overrides)  # type: ignore[arg-type]


def message(topic: str = "T", queue_id: int = 0, body: bytes = b"x", **props: str) -> MessageInner:
    return MessageInner(topic=topic, queue_id=queue_id, body=body, properties=dict(props))


def log_records(store: MessageStore) -> list[MessageExt]:
    """Every record of the commit log, walked by offset (end-of-segment markers skipped),
    each checked whole: decodable, CRC right, its offset field where it sits."""
    seg = store.config.commit_log_segment_size
    out: list[MessageExt] = []
    offset = store.min_physical_offset
    while offset < store.max_physical_offset:
        record = store.read_record(offset)
        if record is None:  # end-of-segment marker: the next record starts the next segment
            offset = offset - offset % seg + seg
            continue
        msg = decode_record(record)
        assert body_crc(msg.body) == msg.body_crc, f"bad CRC at {offset}"
        assert msg.commit_log_offset == offset
        out.append(msg)
        offset += len(record)
    assert offset == store.max_physical_offset
    return out


def assert_consistent(store: MessageStore) -> list[MessageExt]:
    """Queues, index and log agree: every queue entry in [min, max) is a whole record of that
    queue at that offset, every log record is in its queue, and its unique key finds it."""
    records = log_records(store)
    by_queue: dict[tuple[str, int], list[MessageExt]] = {}
    for msg in records:
        if MessageSysFlag.is_consumable_transaction_type(msg.sys_flag):
            by_queue.setdefault((msg.topic, msg.queue_id), []).append(msg)
    for topic in store.topics():
        for queue_id in store.queue_ids(topic):
            expected = by_queue.pop((topic, queue_id), [])
            lo, hi = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
            expected = [m for m in expected if m.queue_offset >= lo]
            assert [m.queue_offset for m in expected] == list(range(lo, hi)), (topic, queue_id)
            got = store.get_messages(topic, queue_id, lo, hi - lo + 1, max_bytes=1 << 40)
            # A read stops at 32 messages and at the end of the consume-queue file.
            per_file = store.config.consume_queue_entries_per_file
            file_end = (lo // per_file + 1) * per_file
            assert got.queue_offsets == list(range(lo, min(hi, lo + 32, file_end)))
            offset = lo
            while offset < hi:
                page = store.get_messages(topic, queue_id, offset, 32, max_bytes=1 << 40)
                assert page.status is GetStatus.FOUND
                for raw, qoff in zip(page.records, page.queue_offsets, strict=True):
                    msg = expected[qoff - lo]
                    assert decode_record(raw).commit_log_offset == msg.commit_log_offset
                offset = page.next_begin_offset
    assert not by_queue, f"log records with no queue: {sorted(by_queue)}"
    for msg in records[-50:]:
        uniq = msg.uniq_key
        if uniq:
            found = store.query_by_key(msg.topic, uniq, 4, 0, 1 << 62)
            assert any(decode_record(r).commit_log_offset == msg.commit_log_offset for r in found)
    return records
