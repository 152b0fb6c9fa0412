"""The key index across file rollovers, its chains when keys share slots, and its rebuild when a
file is damaged."""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.protocol.message import decode_record
from longboat.store import MessageStore
from longboat.store.index.key_index import KeyIndex

from .helpers import message, small_config


def fill(store: MessageStore, count: int, start: int = 0) -> None:
    for i in range(start, start + count, 10):
        batch = [message(body=b"%d" % (i + j), KEYS=f"k{(i + j) % 7} all", UNIQ_KEY=f"u{i + j}")
                 for j in range(10)]  # fmt: skip
        assert store.put_messages(batch).ok


def bodies(store: MessageStore, key: str, n: int = 1000) -> list[bytes]:
    return [decode_record(r).body for r in store.query_by_key("T", key, n, 0, 1 << 62)]


def test_queries_span_index_files(store_dir: Path) -> None:
    cfg = small_config(store_dir, index_max_entries=100)
    with MessageStore(cfg) as store:
        fill(store, 400)
        assert len(list((store_dir / "index").iterdir())) > 5
        assert bodies(store, "k3") == [b"%d" % i for i in range(399, -1, -1) if i % 7 == 3]
        assert bodies(store, "u123") == [b"123"]
        assert len(bodies(store, "all", 50)) == 50


def damage_the_first_file(index_dir: Path) -> None:
    with sorted(index_dir.iterdir())[0].open("r+b") as f:
        f.write(b"garbage!")


@pytest.mark.parametrize(
    ("break_the_index", "warning"),
    [
        (damage_the_first_file, "damaged"),
        (shutil.rmtree, "rebuilding it from commit-log offset 0"),
    ],
)
def test_a_damaged_or_deleted_index_is_rebuilt_from_the_log(
    store_dir: Path,
    caplog: pytest.LogCaptureFixture,
    break_the_index: Callable[[Path], None],
    warning: str,
) -> None:
    """A damaged file is rebuilt with the files after it; a deleted directory (a store's
    first open creates it) from the whole log."""
    cfg = small_config(store_dir, index_max_entries=300)
    with MessageStore(cfg) as store:
        fill(store, 400)
    break_the_index(store_dir / "index")
    with caplog.at_level(logging.WARNING, logger="longboat.store"):
        store = MessageStore(cfg)
        store.open()
    try:
        assert any(warning in r.getMessage() for r in caplog.records)
        assert bodies(store, "u5") == [b"5"]
        assert bodies(store, "k2") == [b"%d" % i for i in range(399, -1, -1) if i % 7 == 2]
    finally:
        store.close()


def test_deferred_index_entries_are_written_later_and_seen_by_lookups_at_once(
    store_dir: Path,
) -> None:
    """With `defer_indexing` an append returns before its index entries are written (the
    broker writes them after the answer leaves), yet a lookup by key finds every append
    that has returned, and closing writes what is still pending."""
    cfg = small_config(store_dir, index_max_entries=100)
    later: list[Callable[[], None]] = []
    with MessageStore(cfg) as store:
        store.defer_indexing(later.append)
        fill(store, 30)
        assert len(later) == 1  # one write scheduled for all the appends pending
        assert store.dispatched_physical_offset < store.max_physical_offset
        assert bodies(store, "u7") == [b"7"]  # the lookup wrote the pending entries first
        assert store.dispatched_physical_offset == store.max_physical_offset
        later.pop()()  # the scheduled write finds nothing left, and the next append re-arms
        fill(store, 10, start=30)
        assert len(later) == 1
        later.pop()()
        assert store.dispatched_physical_offset == store.max_physical_offset
        fill(store, 10, start=40)
    assert later  # never run: close wrote those entries
    assert store.dispatched_physical_offset == store.max_physical_offset
    later.pop()()  # a write that runs after close finds nothing to do
    with MessageStore(cfg) as store:
        assert bodies(store, "u45") == [b"45"]
        assert bodies(store, "k3") == [b"%d" % i for i in range(49, -1, -1) if i % 7 == 3]


@settings(max_examples=200, deadline=None)
@given(
    batches=st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=30), max_size=12),
    slots=st.sampled_from([1, 7, 64]),
)
def test_every_entry_is_found_newest_first_whatever_its_slot_shares(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[int]], slots: int
) -> None:
    """Batches whose keys all fall in distinct slots are written in one piece, batches with
    keys sharing a slot chain entry by entry: both must leave every chain whole."""
    index = KeyIndex(tmp_path_factory.mktemp("index"), slots, 100)
    index.load(0)
    written: list[tuple[int, int]] = []
    offset = 0
    try:
        for batch in batches:
            offsets = [offset + 10 * i for i in range(len(batch))]
            offset += 10 * len(batch)
            index.add(batch, offsets, [1_000 + len(written)] * len(batch), offset)
            written += zip(batch, offsets, strict=True)
        for h in {h for batch in batches for h in batch}:
            newest_first = [o for wh, o in reversed(written) if wh == h]
            assert index.lookup(h, 0, 1 << 40, 10_000) == newest_first
    finally:
        index.close()


def test_a_log_sparser_than_an_index_files_time_range_is_reindexed(store_dir: Path) -> None:
    """An index file holds store times as 4-byte millisecond deltas (~24.8 days): a rebuild
    that re-indexes records further apart in one batch splits them over files instead of
    failing the store's open."""
    now = [1_700_000_000.0]
    cfg = small_config(store_dir)
    with MessageStore(cfg, clock=lambda: now[0]) as store:
        for key in ("early", "late", "later"):
            assert store.put_message(message(body=key.encode(), KEYS=key)).ok
            now[0] += 30 * 86_400
    first = sorted((store_dir / "index").iterdir())[0]
    with first.open("r+b") as f:
        f.write(b"garbage!")
    with MessageStore(cfg, clock=lambda: now[0]) as store:
        assert [bodies(store, key) for key in ("early", "late", "later")] == [
            [b"early"],
            [b"late"],
            [b"later"],
        ]


def test_a_lookup_waits_for_a_deferred_index_write_under_way_on_another_thread(
    store_dir: Path,
) -> None:
    """A deferred write takes every pending entry at once; a lookup from another thread
    while it is under way finds what it is writing, not an index without it."""
    later: list[Callable[[], None]] = []
    with MessageStore(small_config(store_dir)) as store:
        store.defer_indexing(later.append)
        fill(store, 10)
        writing, release = threading.Event(), threading.Event()
        index_add = KeyIndex.add

        def slow_add(index: KeyIndex, *args: Any) -> None:
            writing.set()
            assert release.wait(10)
            index_add(index, *args)

        with patch.object(KeyIndex, "add", slow_add):
            writer = threading.Thread(target=later.pop())
            writer.start()
            assert writing.wait(10)  # the deferred write holds the entries now
            found: list[list[bytes]] = []
            lookup = threading.Thread(target=lambda: found.append(bodies(store, "u7")))
            lookup.start()
            try:
                lookup.join(0.2)
                assert lookup.is_alive()  # waiting for the write, not answering without it
            finally:
                release.set()
                writer.join(10)
                lookup.join(10)
        assert found == [[b"7"]]
