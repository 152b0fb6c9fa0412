"""ENOSPC itself, on a real 96 MiB filesystem (`small_disk`), with the watermark out of the way
(a disk probe that always answers 10 %): the segment roll that cannot be allocated is refused
with SERVICE_NOT_AVAILABLE, leaves no file behind and the log as it was, and the store reopens
on the full disk with every acknowledged message."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from longboat.store import MessageStore, PutStatus
from longboat.store.retention import DiskSpace

from .helpers import assert_consistent, message, small_config

MiB = 1024 * 1024


def never_full(_path: Path) -> DiskSpace:
    """10 % of a disk so large that the next segment's reservation changes nothing."""
    return DiskSpace(used=1 << 46, total=1 << 50)


def open_store(root: Path) -> MessageStore:
    config = small_config(root, commit_log_segment_size=16 * MiB)
    store = MessageStore(config, disk_usage=never_full)
    store.open()
    return store


def test_a_roll_refused_by_enospc_leaves_the_log_whole_and_the_store_reopens(
    small_disk: Path,
) -> None:
    root = small_disk / "store"
    store = open_store(root)
    acked: dict[int, bytes] = {}
    try:
        for n in range(10_000):
            payload = n.to_bytes(8, "big") + os.urandom(64 * 1024)
            body = hashlib.sha256(payload).digest() + payload
            result = store.put_message(message(body=body))
            if result.status is not PutStatus.PUT_OK:
                break
            assert result.appended is not None
            acked[result.appended.queue_offsets[0]] = body
        assert result.status is PutStatus.SERVICE_NOT_AVAILABLE, result
        assert "No space left" in (result.error or "")
        # Only whole, allocated segments: the file that could not be allocated is gone.
        files = sorted((root / "commitlog").iterdir())
        assert all(f.stat().st_size == 16 * MiB for f in files)
        assert store.max_physical_offset < len(files) * 16 * MiB
        assert_consistent(store)
    finally:
        store.close()
    store = open_store(root)
    try:
        records = assert_consistent(store)
        assert {m.queue_offset: m.body for m in records} == acked
    finally:
        store.close()
