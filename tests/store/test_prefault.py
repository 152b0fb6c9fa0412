"""Populating commit-log pages ahead of the writer (ASYNC_FLUSH) changes nothing a reader or a
restart sees: appends across many segments come back intact, the zeros populated ahead never
read as records, and closing the store stops the thread."""

from __future__ import annotations

import mmap
import tempfile
import threading
from pathlib import Path

import pytest

from longboat.store import FlushDiskType, MessageStore, PutStatus, commit_log
from longboat.store.prefault import Prefaulter, mapping_address

from .helpers import log_records, message, small_config


def _prefault_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "longboat-prefault"}


def test_appends_across_segments_with_pages_populated_ahead_come_back_after_a_restart(
    tmp_path: Path,
) -> None:
    cfg = small_config(tmp_path, flush_disk_type=FlushDiskType.ASYNC_FLUSH)
    bodies = [f"body-{i}".encode() * 40 for i in range(600)]  # ~150 KB: several 64 KiB segments
    # Stores of other tests may still be open: only this store's thread is watched.
    others = _prefault_threads()
    with MessageStore(cfg) as store:
        ours = _prefault_threads() - others
        assert ours
        for start in range(0, len(bodies), 50):
            batch = [message(body=b, TAGS="TagA") for b in bodies[start : start + 50]]
            assert store.put_messages(batch).status is PutStatus.PUT_OK
    assert not ours & _prefault_threads()
    with MessageStore(small_config(tmp_path)) as store:
        assert [m.body for m in log_records(store)] == bodies


def test_a_prefaulter_request_leaves_the_bytes_as_they_were() -> None:
    with tempfile.TemporaryFile() as file:
        file.truncate(1 << 20)
        mm = mmap.mmap(file.fileno(), 1 << 20)
        mm[:5] = b"kept!"
        prefaulter = Prefaulter()
        prefaulter.request(mapping_address(mm) + 100, (1 << 20) - 100)
        prefaulter.close()
        assert mm[:5] == b"kept!" and mm[5:] == bytes((1 << 20) - 5)
        mm.close()  # the address was taken without keeping the map exported


class _RecordingPrefaulter:
    """Stands in for the thread: records the spans asked for."""

    def __init__(self) -> None:
        self.working = True
        self.sizes: list[int] = []

    def request(self, address: int, size: int) -> None:
        self.sizes.append(size)

    def close(self) -> None:
        self.working = False


def test_pages_are_populated_only_as_far_ahead_as_the_log_has_grown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An idle broker that took one message holds a page or so populated ahead, not the whole
    distance; a busy writer soon has the whole distance populated ahead of it."""
    ahead = 64 * 1024
    monkeypatch.setattr(commit_log, "PREFAULT_AHEAD", ahead)
    monkeypatch.setattr(commit_log, "Prefaulter", _RecordingPrefaulter)
    log = commit_log.CommitLog(tmp_path, 1 << 20)
    log.load()
    log.prefault_ahead()
    recorder = log._prefaulter
    assert isinstance(recorder, _RecordingPrefaulter)

    log.write(log.reserve(100), b"r" * 100)
    assert sum(recorder.sizes) <= 100  # populated up to twice what was written

    record = b"r" * 1000
    while log.write_offset < 4 * ahead:
        log.write(log.reserve(len(record)), record)
    populated_to = 100 + sum(recorder.sizes)  # the spans follow each other from the first end
    assert ahead // 2 <= populated_to - log.write_offset <= ahead
    log.close()
