"""Retention with tiny segments and a fake clock: what goes, when, and what readers see after."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from longboat.protocol.message import decode_record
from longboat.store import GetStatus, MessageStore, PutStatus
from longboat.store.retention import DiskSpace

from .helpers import assert_consistent, message, small_config

HOUR = 3600.0
START = 1_700_000_000.0
# Old messages are stored at START, new ones an hour later: at DELETE_AT only the old ones
# are past the 72 h reserved time.
DELETE_AT = START + 72.5 * HOUR


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Disk:
    """A disk used at `ratio`, so large that the next segment's reservation changes nothing."""

    TOTAL = 1 << 50

    def __init__(self) -> None:
        self.ratio = 0.10

    def __call__(self, _path: Path) -> DiskSpace:
        return DiskSpace(int(self.ratio * self.TOTAL), self.TOTAL)


def open_store(root: Path, clock: Clock, disk: Disk) -> MessageStore:
    """A store whose retention runs only when a test calls `delete_expired`: the maintenance
    thread's own round (every 10 s by default) would delete under a test's reads on a slow
    host once the fake disk says it is nearly full."""
    cfg = small_config(
        root,
        commit_log_segment_size=4096,
        consume_queue_entries_per_file=16,
        index_max_entries=64,
        delete_when=time.localtime(DELETE_AT).tm_hour,
        retention_check_interval_ms=24 * 3_600_000,
    )
    store = MessageStore(cfg, clock=clock, disk_usage=disk)
    store.open()
    return store


def fill(store: MessageStore, count: int, tag: bytes) -> None:
    for i in range(count):
        result = store.put_message(message(queue_id=i % 2, body=tag + b"-%d" % i, KEYS=f"k{i}"))
        assert result.ok
    store.flush()


def files(root: Path, sub: str) -> int:
    return sum(1 for p in (root / sub).rglob("*") if p.is_file())


def test_expired_segments_go_at_delete_when_and_readers_see_the_new_minimum(
    store_dir: Path,
) -> None:
    clock, disk = Clock(), Disk()
    store = open_store(store_dir, clock, disk)
    try:
        fill(store, 300, b"old")
        clock.now += HOUR
        fill(store, 60, b"new")
        segments_before = files(store_dir, "commitlog")
        queue_files_before = files(store_dir, "consumequeue")
        index_files_before = files(store_dir, "index")

        # Not old enough yet, even when forced.
        assert store.delete_expired(now_ms=int((START + 71 * HOUR) * 1000), force=True) == 0
        # Old enough, but not the hour to delete and the disk is fine.
        off_hour = DELETE_AT - 2 * HOUR + 3 * 24 * HOUR
        assert store.delete_expired(now_ms=int(off_hour * 1000)) == 0
        # The configured hour: every segment holding only the old messages goes.
        deleted = store.delete_expired(now_ms=int(DELETE_AT * 1000))
        assert deleted > 0
        assert files(store_dir, "commitlog") == segments_before - deleted
        assert files(store_dir, "consumequeue") < queue_files_before
        assert files(store_dir, "index") < index_files_before
        assert store.min_physical_offset == deleted * 4096

        for q in (0, 1):
            lo = store.min_offset("T", q)
            assert 0 < lo <= 150 < store.max_offset("T", q)
            below = store.get_messages("T", q, 0, 32)
            assert (below.status, below.next_begin_offset) == (GetStatus.OFFSET_TOO_SMALL, lo)
            assert store.get_messages("T", q, lo, 32).status is GetStatus.FOUND
            earliest = store.earliest_store_time("T", q)
            assert earliest == store.store_time_at("T", q, lo)
            assert earliest in (int(START * 1000), int((START + HOUR) * 1000))
        # The old k0 went with its segment; the new one is still found.
        (k0,) = store.query_by_key("T", "k0", 5, 0, 1 << 62)
        assert decode_record(k0).body == b"new-0"
        mins = _mins(store)
        records = assert_consistent(store)
        # Every new message survived; the old ones that remain are the newest of them.
        assert sum(m.body.startswith(b"new") for m in records) == 60
    finally:
        store.close()

    store = open_store(store_dir, clock, disk)
    try:
        assert store.min_physical_offset == deleted * 4096
        assert _mins(store) == mins
        assert_consistent(store)
    finally:
        store.close()


def test_the_maintenance_thread_waits_one_interval_before_its_first_retention_round(
    store_dir: Path,
) -> None:
    """With every segment deletable (the fake disk over the forcible ratio) the thread still
    deletes nothing before `retention_check_interval_ms` has passed: its checkpoint rounds
    (every 50 ms here) do not bring the first retention round forward."""
    clock, disk = Clock(), Disk()
    store = open_store(store_dir, clock, disk)
    try:
        fill(store, 200, b"a")
        disk.ratio = 0.88
        before = store.min_physical_offset
        time.sleep(0.5)  # ten checkpoint rounds
        assert store.min_physical_offset == before
    finally:
        store.close()


def _mins(store: MessageStore) -> list[int]:
    return [store.min_offset("T", q) for q in (0, 1)]


def test_disk_pressure_deletes_without_waiting_for_the_hour(store_dir: Path) -> None:
    clock, disk = Clock(), Disk()
    store = open_store(store_dir, clock, disk)
    try:
        fill(store, 200, b"a")
        now = int((START + 80 * HOUR) * 1000)
        off_hour = now + int(3 * HOUR * 1000)
        disk.ratio = 0.80  # over diskMaxUsedSpaceRatio: expired segments go at any hour
        assert store.delete_expired(now_ms=off_hour) > 0
        clock.now += 200 * HOUR
        fill(store, 200, b"b")
        disk.ratio = 0.88  # over the forcible ratio: the oldest goes even if young
        before = store.min_physical_offset
        assert store.delete_expired(now_ms=int(clock.now * 1000)) == 1
        assert store.min_physical_offset == before + 4096
        assert_consistent(store)
    finally:
        store.close()


def test_a_full_disk_refuses_appends_until_space_returns(store_dir: Path) -> None:
    clock, disk = Clock(), Disk()
    store = open_store(store_dir, clock, disk)
    try:
        assert store.put_message(message()).ok
        disk.ratio = 0.95
        refused = wait_for(lambda: store.put_message(message()).status)
        assert refused is PutStatus.SERVICE_NOT_AVAILABLE
        assert "full" in (store.put_message(message()).error or "")
        disk.ratio = 0.5
        assert wait_for(lambda: store.put_message(message()).status) is PutStatus.PUT_OK
    finally:
        store.close()


def wait_for(probe: Callable[[], PutStatus], timeout: float = 10.0) -> PutStatus:
    """Probe until the status changes from the first one seen (the maintenance thread checks
    the disk every checkpoint interval, 50 ms here) or the timeout passes."""
    first = probe()
    deadline = time.monotonic() + timeout
    status = first
    while status is first and time.monotonic() < deadline:
        time.sleep(0.01)
        status = probe()
    return status
