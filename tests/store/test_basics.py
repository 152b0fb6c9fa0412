"""Put, get by queue offset and by commit-log offset, reopen, and refusals of bad input."""

from __future__ import annotations

from pathlib import Path

from longboat.protocol.message import decode_record
from longboat.store import GetStatus, MessageStore, PutStatus

from .helpers import message, small_config


def test_messages_read_back_intact_by_queue_and_physical_offset(store: MessageStore) -> None:
    results = [
        store.put_message(message(queue_id=i % 3, body=b"body-%d" % i, TAGS="a", KEYS=f"k{i}"))
        for i in range(300)
    ]
    assert all(r.ok for r in results)
    for q in range(3):
        got = store.get_messages("T", q, 0, 1000)
        assert got.status is GetStatus.FOUND
        bodies = [decode_record(r).body for r in got.records]
        assert bodies == [b"body-%d" % i for i in range(q, 300, 3)][: len(bodies)]
        assert got.queue_offsets == list(range(len(bodies)))
    for i, r in enumerate(results):
        rec = r.records[0]
        msg = store.read_message(rec.commit_log_offset)
        assert msg is not None and msg.body == b"body-%d" % i
        assert msg.queue_offset == rec.queue_offset == i // 3
        assert msg.offset_msg_id == rec.msg_id


def test_reopen_keeps_offsets_and_records(store_dir: Path) -> None:
    with MessageStore(small_config(store_dir)) as s:
        for i in range(100):
            assert s.put_message(message(body=b"%d" % i)).ok
    with MessageStore(small_config(store_dir)) as s:
        assert s.max_offset("T", 0) == 100
        assert s.put_message(message(body=b"100")).records[0].queue_offset == 100
        got = s.get_messages("T", 0, 95, 32)
        assert [decode_record(r).body for r in got.records] == [b"%d" % i for i in range(95, 101)]


def test_bad_input_is_refused_with_nothing_written(store: MessageStore) -> None:
    cases = {
        "too big": message(body=b"x" * (4 * 1024 * 1024 + 1)),
        "empty topic": message(topic=""),
        "bad chars": message(topic="a b"),
        "long topic": message(topic="t" * 128),
        # re.match(...$) accepted a trailing newline, and the name became a directory.
        "trailing newline": message(topic="abc\n"),
    }
    for name, msg in cases.items():
        result = store.put_message(msg)
        assert result.status is PutStatus.MESSAGE_ILLEGAL, name
        assert result.error, name
    assert store.max_physical_offset == 0
    assert store.topics() == []


def test_a_refused_append_leaves_no_queue_behind(store_dir: Path) -> None:
    # Admitted (under maxMessageSize) but larger than a whole commit-log segment: refused at
    # append time, after the queue used to be registered.
    with MessageStore(small_config(store_dir, commit_log_segment_size=4096)) as s:
        result = s.put_message(message(topic="Fresh", body=b"x" * 8192))
        assert result.status is PutStatus.MESSAGE_ILLEGAL and "segment" in (result.error or "")
        assert s.topics() == [] and s.queue_ids("Fresh") == []
        assert s.max_physical_offset == 0
        assert s.put_message(message(topic="Fresh", body=b"fits")).ok
        assert s.topics() == ["Fresh"] and s.max_offset("Fresh", 0) == 1


def test_oversized_properties_and_mixed_batches_are_refused(store: MessageStore) -> None:
    huge = store.put_message(message(KEYS="k" * 40_000))
    assert huge.status is PutStatus.PROPERTIES_SIZE_EXCEEDED and "32767" in (huge.error or "")
    mixed = store.put_messages([message(queue_id=0), message(queue_id=1)])
    assert mixed.status is PutStatus.MESSAGE_ILLEGAL and "one queue" in (mixed.error or "")
    assert store.put_messages([]).status is PutStatus.MESSAGE_ILLEGAL
    negative = store.put_message(message(queue_id=-1))
    assert negative.status is PutStatus.MESSAGE_ILLEGAL
    assert store.max_physical_offset == 0 and store.topics() == []


def test_a_closed_store_refuses_appends(store_dir: Path) -> None:
    store = MessageStore(small_config(store_dir))
    store.open()
    store.close()
    store.close()  # idempotent
    result = store.put_message(message())
    assert result.status is PutStatus.SERVICE_NOT_AVAILABLE
