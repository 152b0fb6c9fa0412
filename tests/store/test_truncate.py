"""Cutting a store's log, closed or open (a former master rejoining as a slave), and where two
logs stop agreeing by their epoch entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from longboat.protocol.controller import EpochEntry
from longboat.protocol.message import decode_record
from longboat.store import MessageStore
from longboat.store.epochs import EpochFile, consistent_point
from longboat.store.truncate import truncate_to

from .helpers import message, small_config


def test_truncate_to_cuts_the_log_and_its_queues_and_appends_continue(store_dir: Path) -> None:
    cfg = small_config(store_dir)
    store = MessageStore(cfg)
    store.open()
    ends = []
    for i in range(600):  # several 64 KiB segments
        result = store.put_message(message(queue_id=i % 2, body=b"%04d" % i + b"x" * 200))
        assert result.appended is not None
        ends.append(result.appended.end)
    store.close()
    cut = ends[299]  # keep messages 0..299
    truncate_to(cfg, cut)
    store = MessageStore(cfg)
    store.open()
    try:
        assert store.max_physical_offset == cut
        assert store.max_offset("T", 0) == 150 and store.max_offset("T", 1) == 150
        got = store.get_messages("T", 1, 149, 10)
        assert got.queue_offsets == [149]
        assert decode_record(b"".join(got.parts)).body[:4] == b"0299"
        # The log continues from the cut, as a slave's stream would continue it.
        result = store.put_message(message(queue_id=0, body=b"next"))
        assert result.appended is not None and result.appended.commit_log_offsets == [cut]
        assert store.max_offset("T", 0) == 151
    finally:
        store.close()


def test_cut_log_cuts_the_open_log_and_its_queues_and_appends_continue(store_dir: Path) -> None:
    cfg = small_config(store_dir)
    store = MessageStore(cfg)
    store.open()
    try:
        ends = []
        for i in range(600):
            result = store.put_message(message(queue_id=i % 2, body=b"%04d" % i + b"x" * 200))
            assert result.appended is not None
            ends.append(result.appended.end)
        cut = ends[299]
        store.cut_log(cut, "a test")
        assert store.max_physical_offset == cut
        assert store.max_offset("T", 0) == 150 and store.max_offset("T", 1) == 150
        assert store.get_messages("T", 1, 150, 10).queue_offsets == []
        result = store.put_message(message(queue_id=0, body=b"next"))
        assert result.appended is not None and result.appended.commit_log_offsets == [cut]
    finally:
        store.close()
    # What the cut left is what a restart finds.
    with MessageStore(cfg) as store:
        assert store.max_offset("T", 0) == 151 and store.max_offset("T", 1) == 150
        got = store.get_messages("T", 0, 150, 10)
        assert decode_record(b"".join(got.parts)).body == b"next"


def test_truncate_past_the_end_changes_nothing(store_dir: Path) -> None:
    cfg = small_config(store_dir)
    with MessageStore(cfg) as store:
        store.put_message(message())
        end = store.max_physical_offset
    truncate_to(cfg, end + 1000)
    with MessageStore(cfg) as store:
        assert store.max_physical_offset == end
        assert store.max_offset("T", 0) == 1


def test_epoch_file_keeps_terms_in_order(tmp_path: Path) -> None:
    epochs = EpochFile(tmp_path)
    epochs.append(1, 0)
    epochs.append(1, 500)  # the same term again (a restarted master): ignored
    epochs.append(3, 900)
    again = EpochFile(tmp_path)
    again.load()
    assert again.entries == [(1, 0), (3, 900)]
    assert again.with_ends(1200) == (EpochEntry(1, 0, 900), EpochEntry(3, 900, 1200))


INF = 2**63 - 1


@pytest.mark.parametrize(
    ("local", "remote", "point"),
    [
        # A former master of term 1 that wrote past where its successor took over.
        ([(1, 0, INF)], [(1, 0, 800), (2, 800, 1500)], 800),
        # A slave behind its master in the same term: nothing to cut.
        ([(1, 0, 600)], [(1, 0, 800)], 600),
        # Both saw terms 1 and 2; the local log ran on in term 2 past the master's end.
        ([(1, 0, 800), (2, 800, INF)], [(1, 0, 800), (2, 800, 1000), (4, 1000, 2000)], 1000),
        # A term with the same number but another start is another history.
        ([(1, 0, 800), (2, 700, INF)], [(1, 0, 800), (2, 800, 1000)], 800),
        # Nothing shared.
        ([(5, 0, INF)], [(1, 0, 800)], None),
    ],
)
def test_consistent_point(
    local: list[tuple[int, int, int]], remote: list[tuple[int, int, int]], point: int | None
) -> None:
    as_entries = lambda rows: tuple(EpochEntry(*r) for r in rows)  # noqa: E731
    assert consistent_point(as_entries(local), as_entries(remote)) == point
