"""Pull reads (RocketMQ's getMessage decision table), time lookups, key queries, listeners."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from longboat.protocol.message import decode_record, decode_records
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.tags import tags_code
from longboat.store import GetStatus, MessageStore, PutStatus

from .helpers import log_records, message, small_config


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def test_decision_table(store: MessageStore) -> None:
    empty = store.get_messages("T", 0, 0, 32)
    assert (empty.status, empty.next_begin_offset) == (GetStatus.NO_MESSAGE_IN_QUEUE, 0)
    assert store.get_messages("T", 0, 5, 32).status is GetStatus.NO_MESSAGE_IN_QUEUE
    for i in range(10):
        store.put_message(message(body=b"%d" % i))
    found = store.get_messages("T", 0, 3, 4)
    assert found.status is GetStatus.FOUND
    assert (found.next_begin_offset, found.min_offset, found.max_offset) == (7, 0, 10)
    assert found.queue_offsets == [3, 4, 5, 6]
    one = store.get_messages("T", 0, 10, 32)
    assert (one.status, one.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_ONE, 10)
    badly = store.get_messages("T", 0, 11, 32)
    # The queue still starts at 0: RocketMQ sends the consumer back to the start.
    assert (badly.status, badly.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_BADLY, 0)


def test_tag_filter_skips_but_counts_scanned_entries(store: MessageStore) -> None:
    for i in range(20):
        store.put_message(message(body=b"%d" % i, TAGS="A" if i % 5 == 0 else "B"))
    want = tags_code("A")
    got = store.get_messages("T", 0, 1, 32, tag_filter=lambda code: code == want)
    assert got.status is GetStatus.FOUND
    assert got.queue_offsets == [5, 10, 15]
    assert got.next_begin_offset == 20
    none = store.get_messages("T", 0, 16, 32, tag_filter=lambda code: code == want)
    assert (none.status, none.next_begin_offset) == (GetStatus.NO_MATCHED_MESSAGE, 20)


def test_a_filtered_scan_is_bounded_whatever_max_msgs_says(store_dir: Path) -> None:
    # A tag nobody sent and maxMsgNums = Java's Integer.MAX_VALUE: the scan used to run to
    # the end of the queue (every held pull's wake-up re-ran it on the event loop).
    nobody = tags_code("Nobody")
    with MessageStore(small_config(store_dir, consume_queue_entries_per_file=1000)) as store:
        for i in range(2500):
            store.put_message(message(body=b"%d" % i, TAGS="A"))
        got = store.get_messages("T", 0, 0, 2**31 - 1, tag_filter=lambda code: code == nobody)
        assert (got.status, got.next_begin_offset) == (GetStatus.NO_MATCHED_MESSAGE, 800)
        # Never past the end of the consume-queue file the read started in.
        tail = store.get_messages("T", 0, 900, 2**31 - 1, tag_filter=lambda code: code == nobody)
        assert tail.next_begin_offset == 1000
        # Unfiltered, the same request still returns a full reply.
        assert len(store.get_messages("T", 0, 0, 2**31 - 1).records) == 32


def test_reply_limits_and_the_first_message_always_goes(store_dir: Path) -> None:
    store = MessageStore(small_config(store_dir, max_transfer_count=4))
    with store:
        for i in range(10):
            store.put_message(message(body=b"z" * 1000 + b"%d" % i))
        assert store.get_messages("T", 0, 0, 32).queue_offsets == [0, 1, 2, 3]
        small = store.get_messages("T", 0, 0, 32, max_bytes=10)
        assert small.queue_offsets == [0] and small.next_begin_offset == 1
        two = store.get_messages("T", 0, 2, 32, max_bytes=2500)
        assert two.queue_offsets == [2, 3] and two.next_begin_offset == 4
        assert [m.body[-1:] for m in decode_records(b"".join(two.records))] == [b"2", b"3"]


def test_batch_is_contiguous_and_in_order(store: MessageStore) -> None:
    result = store.put_messages([message(body=b"%d" % i, KEYS=f"k{i}") for i in range(50)])
    assert result.ok
    offsets = [r.commit_log_offset for r in result.records]
    assert offsets == sorted(offsets)
    for a, b in zip(result.records, result.records[1:], strict=False):
        assert a.commit_log_offset + a.size == b.commit_log_offset
    assert [r.queue_offset for r in result.records] == list(range(50))
    assert len({r.store_timestamp for r in result.records}) == 1


def test_a_batch_is_read_as_one_piece_and_split_into_its_records(store: MessageStore) -> None:
    store.put_messages([message(body=b"%d" % i) for i in range(40)])
    got = store.get_messages("T", 0, 4, 32)
    assert got.status is GetStatus.FOUND and len(got.parts) == 1
    assert [decode_record(r).body for r in got.records] == [b"%d" % i for i in range(4, 36)]
    assert got.body == b"".join(got.records) and got.sizes == [len(r) for r in got.records]
    assert decode_records(got.body)[0].queue_offset == 4


def test_runs_break_where_the_log_interleaves_queues_or_a_filter_skips(store: MessageStore) -> None:
    for i in range(64):
        store.put_message(message(queue_id=i % 2, body=b"%d" % i))
    store.put_messages([message(body=b"b%d" % i, TAGS="B" if i == 3 else "A") for i in range(8)])
    interleaved = store.get_messages("T", 0, 0, 32)
    assert len(interleaved.parts) == 32  # no two records of queue 0 are adjacent in the log
    assert [decode_record(r).body for r in interleaved.records] == [
        b"%d" % i for i in range(0, 64, 2)
    ]
    want = tags_code("A")
    filtered = store.get_messages("T", 0, 32, 32, tag_filter=lambda code: code == want)
    assert len(filtered.parts) == 2  # the batch, cut where its B is skipped
    assert [decode_record(r).body for r in filtered.records] == [
        b"b%d" % i for i in range(8) if i != 3
    ]
    assert filtered.queue_offsets == [32, 33, 34, 36, 37, 38, 39]


def test_an_unfiltered_pull_reads_one_piece_per_batch_and_cuts_between_records(
    store: MessageStore,
) -> None:
    for b in range(3):  # three batches of queue 0, another queue's message between them
        store.put_messages([message(body=b"%d-%d" % (b, i)) for i in range(10)])
        store.put_message(message(queue_id=1, body=b"other"))
    got = store.get_messages("T", 0, 0, 32)
    assert len(got.parts) == 3 and got.queue_offsets == list(range(30))
    assert [decode_record(r).body for r in got.records] == [
        b"%d-%d" % (b, i) for b in range(3) for i in range(10)
    ]
    assert got.next_begin_offset == 30
    # Cut by bytes inside the second batch: whole records only, the runs read up to there.
    cut = store.get_messages("T", 0, 5, 32, max_bytes=sum(got.sizes[5:15]) + 1)
    assert cut.queue_offsets == list(range(5, 15)) and cut.next_begin_offset == 15
    assert len(cut.parts) == 2 and cut.body == b"".join(got.records[5:15])


def test_runs_end_where_a_segment_does(store_dir: Path) -> None:
    with MessageStore(small_config(store_dir, consume_queue_entries_per_file=1000)) as store:
        for b in range(30):  # 30 batches of 10 x ~360 B: past the first 64 KiB segment
            store.put_messages(
                [message(body=b"%04d" % (b * 10 + i) + b"x" * 300) for i in range(10)]
            )
        bodies: list[bytes] = []
        offset = 0
        while offset < 300:
            got = store.get_messages("T", 0, offset, 32)
            assert got.status is GetStatus.FOUND
            assert b"".join(got.parts) == got.body and len(got.body) == sum(got.sizes)
            bodies += [decode_record(r).body[:4] for r in got.records]
            offset = got.next_begin_offset
        assert bodies == [b"%04d" % i for i in range(300)]
        assert store.max_physical_offset > 64 * 1024


def test_records_deleted_under_a_read_are_left_out_and_scanned_past(store_dir: Path) -> None:
    with MessageStore(small_config(store_dir, consume_queue_entries_per_file=1000)) as store:
        for b in range(30):
            store.put_messages(
                [message(body=b"%04d" % (b * 10 + i) + b"x" * 300) for i in range(10)]
            )
        first = store._log.chain.segments[0]
        in_first = store.get_messages("T", 0, 0, 32).queue_offsets
        across = sum(1 for m in log_records(store) if m.commit_log_offset < first.end) - 10
        whole = store.get_messages("T", 0, across, 32)  # across the end of the first segment
        first.close()  # what retention's delete does to a segment a read is about to use
        gone = store.get_messages("T", 0, 0, 32)
        assert (gone.status, gone.next_begin_offset, gone.parts) == (
            GetStatus.MESSAGE_WAS_REMOVING,
            32,
            [],
        )
        assert in_first == list(range(32))
        cut = store.get_messages("T", 0, across, 32)
        kept = [o for o, r in zip(whole.queue_offsets, whole.records, strict=True)
                if decode_record(r).commit_log_offset >= first.end]  # fmt: skip
        assert cut.status is GetStatus.FOUND and len(kept) == 22
        # The 10 gone entries count as scanned; the pull fills up from past them.
        assert cut.queue_offsets == list(range(kept[0], kept[0] + 32))
        assert cut.next_begin_offset == kept[0] + 32
        assert [decode_record(r).queue_offset for r in cut.records] == cut.queue_offsets


def test_transaction_halves_get_no_queue_entry(store: MessageStore) -> None:
    prepared = message(body=b"half")
    prepared.sys_flag = MessageSysFlag.TRANSACTION_PREPARED_TYPE
    result = store.put_message(prepared)
    assert result.ok and result.records[0].queue_offset == 0
    assert store.max_offset("T", 0) == 0
    half = store.read_message(result.records[0].commit_log_offset)
    assert half is not None and half.body == b"half"
    committed = message(body=b"commit")
    committed.sys_flag = MessageSysFlag.TRANSACTION_COMMIT_TYPE
    assert store.put_message(committed).records[0].queue_offset == 0
    assert store.max_offset("T", 0) == 1


def test_arrival_listener_runs_after_the_entry_is_readable(store: MessageStore) -> None:
    seen = []

    def listener(
        topic: str, queue_id: int, new_max: int, code: int, props: Mapping[str, str]
    ) -> None:
        got = store.get_messages(topic, queue_id, new_max - 1, 1)
        seen.append((topic, queue_id, new_max, code, props.get("TAGS"), got.status))

    store.add_arrival_listener(listener)
    store.put_message(message(queue_id=2, TAGS="A"))
    store.put_messages([message(queue_id=1, TAGS=t) for t in ("A", "B", "A")])
    assert seen == [
        ("T", 2, 1, tags_code("A"), "A", GetStatus.FOUND),
        ("T", 1, 3, tags_code("A"), "A", GetStatus.FOUND),
        ("T", 1, 3, tags_code("B"), "B", GetStatus.FOUND),
    ]


def test_arrival_listener_is_called_on_the_appending_thread(store: MessageStore) -> None:
    threads = []
    store.add_arrival_listener(lambda *a: threads.append(threading.current_thread()))
    worker = threading.Thread(target=store.put_message, args=(message(),))
    worker.start()
    worker.join()
    assert threads == [worker]


def test_a_listener_is_told_before_the_key_index_is_written(store: MessageStore) -> None:
    """The wake-up does not wait for the key index (a page fault per entry while a fresh
    index file fills); the append still returns only once the index has the keys, and the
    store counts the records dispatched only then."""
    during: list[tuple[int, int]] = []

    def listener(*_: object) -> None:
        found = store.query_by_key("T", "k1", 4, 0, 2**62)
        during.append((len(found), store.dispatched_physical_offset))

    store.put_message(message(KEYS="k0"))
    before = store.max_physical_offset
    store.add_arrival_listener(listener)
    store.put_message(message(KEYS="k1"))
    assert during == [(0, before)]
    assert len(store.query_by_key("T", "k1", 4, 0, 2**62)) == 1
    assert store.dispatched_physical_offset == store.max_physical_offset


def test_an_index_that_cannot_be_written_fails_no_append(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The record and its queue entry are stored and the consumers woken before the index is
    written: a full disk under the index costs lookups by key, never the send."""
    index = store._index
    real_add = index.add

    def full_disk(*columns_and_end: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(index, "add", full_disk)
    result = store.put_message(message(KEYS="lost"))
    assert result.status is PutStatus.PUT_OK
    assert store.get_messages("T", 0, 0, 1).status is GetStatus.FOUND
    assert "key index: 1 entries below log offset" in caplog.text
    monkeypatch.setattr(index, "add", real_add)
    store.put_message(message(KEYS="kept"))
    assert store.query_by_key("T", "lost", 4, 0, 2**62) == []
    assert len(store.query_by_key("T", "kept", 4, 0, 2**62)) == 1
    assert store.dispatched_physical_offset == store.max_physical_offset


def test_tags_code_override_is_kept(store: MessageStore) -> None:
    delayed = message(TAGS="A")
    delayed.tags_code = 1_700_000_123_456
    store.put_message(delayed)
    hit = store.get_messages("T", 0, 0, 1, tag_filter=lambda code: code == 1_700_000_123_456)
    assert hit.status is GetStatus.FOUND


def test_store_times_and_time_lookup(store_dir: Path) -> None:
    clock = FakeClock()
    with MessageStore(small_config(store_dir), clock=clock) as store:
        assert store.earliest_store_time("T", 0) == -1
        stamps = []
        for step in (0, 0, 1, 1, 1, 5, -100, 7):
            clock.now += step
            result = store.put_message(message())
            stamps.append(result.records[0].store_timestamp)
        # The clock went back: store times did not.
        base = int(1_700_000_000.0 * 1000)
        assert store.earliest_store_time("T", 0) == base
        assert store.store_time_at("T", 0, 5) == stamps[5]
        assert store.store_time_at("T", 0, 99) is None
        # The first of equal times, not the middle of a run of them.
        assert stamps == [base + d for d in (0, 0, 1000, 2000, 3000, 8000, 8000, 8000)]
        assert store.offset_by_timestamp("T", 0, base + 1000) == 2
        assert store.offset_by_timestamp("T", 0, base + 1500) == 3
        assert store.offset_by_timestamp("T", 0, base + 8000) == 5
        assert store.offset_by_timestamp("T", 0, 0) == 0
        assert store.offset_by_timestamp("T", 0, base + 10**9) == 8


def test_query_by_key_and_unique_key(store: MessageStore) -> None:
    for i in range(200):
        store.put_message(message(queue_id=i % 4, body=b"%d" % i, KEYS=f"order{i % 50} shared",
                                  UNIQ_KEY=f"U{i}"))  # fmt: skip
    store.put_message(message(topic="Other", body=b"other", KEYS="order7"))
    found = [decode_record(r) for r in store.query_by_key("T", "order7", 10, 0, 1 << 62)]
    assert [m.body for m in found] == [b"157", b"107", b"57", b"7"]  # newest first
    assert all(m.topic == "T" for m in found)
    assert len(store.query_by_key("T", "shared", 32, 0, 1 << 62)) == 32
    (one,) = store.query_by_key("T", "U42", 5, 0, 1 << 62)
    assert decode_record(one).body == b"42"
    assert store.query_by_key("T", "nothing", 5, 0, 1 << 62) == []
    ts = decode_record(one).store_timestamp
    assert store.query_by_key("T", "U42", 5, ts + 1, ts + 10) == []


def test_topics_and_queue_ids(store: MessageStore) -> None:
    store.put_message(message(topic="B", queue_id=3))
    store.put_message(message(topic="A", queue_id=0))
    store.put_message(message(topic="B", queue_id=1))
    assert store.topics() == ["A", "B"]
    assert store.queue_ids("B") == [1, 3]
    assert store.queue_ids("missing") == []


def test_raw_log_range_reads(store: MessageStore) -> None:
    results = [store.put_message(message(body=b"%d" % i)).records[0] for i in range(3)]
    first, last = results[0], results[-1]
    span = last.commit_log_offset + last.size - first.commit_log_offset
    raw = store.read_log(first.commit_log_offset, span)
    assert raw is not None
    assert [m.body for m in decode_records(raw)] == [b"0", b"1", b"2"]
    assert store.read_log(store.max_physical_offset, 1) is None
