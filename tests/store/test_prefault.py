"""Populating commit-log pages ahead of the writer (ASYNC_FLUSH) changes nothing a reader or a
restart sees: appends across many segments come back intact, the zeros populated ahead never
read as records, and closing the store stops the thread."""

from __future__ import annotations

import mmap
import tempfile
import threading
from pathlib import Path

from longboat.store import FlushDiskType, MessageStore, PutStatus
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
