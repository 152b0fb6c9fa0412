"""Recovery from damaged tails: a crash leaves page-cache state, then bytes go bad.

A crash is taken as a copy of the store directory while the store is open (what SIGKILL
leaves: the abort marker, an old checkpoint, every written byte).  The copy is then damaged
on purpose and opened: the bad record must be detected, cut with a log line saying where and
why, and everything before it kept, with queues and index agreeing with the shorter log.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from longboat.store import MessageStore, StoreConfig

from .helpers import assert_consistent, message, small_config

SEGMENT = 16 * 1024


def crashed_copy(tmp_path: Path, count: int = 300) -> tuple[Path, list[tuple[int, int]]]:
    """A store directory as a crash leaves it; returns it and the (offset, size) of every
    record appended."""
    live = tmp_path / "live"
    cfg = _config(live)
    store = MessageStore(cfg)
    store.open()
    placed: list[tuple[int, int]] = []
    for i in range(0, count, 3):
        batch = [
            message(queue_id=(i // 3) % 2, body=b"m%d|" % (i + j) + b"y" * ((i + j) % 90),
                    KEYS=f"key{i + j}", UNIQ_KEY=f"uniq{i + j}")
            for j in range(3)
        ]  # fmt: skip
        result = store.put_messages(batch)
        assert result.ok
        placed += [(r.commit_log_offset, r.size) for r in result.records]
    store.flush()
    crashed = tmp_path / "crashed"
    shutil.copytree(live, crashed)
    store.close()
    assert (crashed / "abort").exists()
    return crashed, placed


def _config(root: Path) -> StoreConfig:
    # No periodic checkpoint: recovery re-verifies everything written in the run.
    return small_config(root, commit_log_segment_size=SEGMENT, checkpoint_interval_ms=3_600_000)


def segment_path(root: Path, offset: int) -> tuple[Path, int]:
    start = offset - offset % SEGMENT
    return root / "commitlog" / f"{start:020d}", offset - start


def overwrite(root: Path, offset: int, data: bytes) -> None:
    """Replace the commit-log bytes at `offset` behind the store's back."""
    path, rel = segment_path(root, offset)
    with path.open("r+b") as f:
        f.seek(rel)
        f.write(data)


def reopen_and_check(
    root: Path, caplog: pytest.LogCaptureFixture, cut_at: int, why: str, *, also: str = ""
) -> None:
    """Reopen the damaged copy: one cut, at `cut_at`, logged with its reason `why` (and the
    warning `also`, when given), and the store consistent and serving after it."""
    assert why, "say which reason the cut must log"
    with caplog.at_level(logging.WARNING, logger="longboat.store"):
        store = MessageStore(_config(root))
        store.open()
    try:
        assert store.max_physical_offset == cut_at
        logged = [r.getMessage() for r in caplog.records]
        cuts = [m for m in logged if "cut at offset" in m]
        assert len(cuts) == 1 and f"cut at offset {cut_at} (" in cuts[0] and why in cuts[0], cuts
        assert not also or any(also in m for m in logged), logged
        records = assert_consistent(store)
        assert records and records[-1].commit_log_offset + records[-1].store_size == cut_at
        bodies = [m.body.split(b"|")[0] for m in records]
        assert bodies == [b"m%d" % i for i in range(len(bodies))]
        # The store goes on: new appends land right after the cut and are read back.
        result = store.put_message(message(queue_id=0, body=b"after"))
        assert result.records[0].commit_log_offset >= cut_at
        after = store.read_message(result.records[0].commit_log_offset)
        assert after is not None and after.body == b"after"
    finally:
        store.close()


def test_flipped_bytes_in_a_body_are_cut_by_crc(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, placed = crashed_copy(tmp_path)
    offset, _ = placed[200]
    overwrite(root, offset + 88 + 2, b"\xff\x00\xee")  # inside the body: only the CRC can tell
    reopen_and_check(root, caplog, offset, f"body CRC mismatch in the record at {offset}")


def test_garbled_record_structure_is_cut(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root, placed = crashed_copy(tmp_path)
    offset, size = placed[220]
    overwrite(root, offset + size - 3, b"\xff\x00\xee")  # properties no longer UTF-8
    reopen_and_check(root, caplog, offset, "does not decode")


def test_truncated_segment_file_is_cut(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root, placed = crashed_copy(tmp_path)
    offset, size = placed[-40]
    path, rel = segment_path(root, offset)
    os.truncate(path, rel + size // 2)
    # Later segments are gone too, as when the file system lost the tail.
    for later in sorted((root / "commitlog").iterdir()):
        if int(later.name) > int(path.name):
            later.unlink()
    # The half record left reads as one whose properties run into the zeros past the file's end.
    reopen_and_check(
        root,
        caplog,
        offset,
        f"the record does not decode: properties do not end the record at {rel}",
        also=f"a segment file ends early at offset {offset + size // 2}",
    )


def test_zeroed_page_is_cut(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root, placed = crashed_copy(tmp_path)
    offset, _ = placed[150]
    page = offset - offset % 4096  # segments are page-aligned
    overwrite(root, page, bytes(4096))
    first_hit = next(o for o, s in placed if o + s > page)
    # The page starts inside that record: its tail is zeros where its properties were.
    assert first_hit < page
    reopen_and_check(root, caplog, first_hit, "the record does not decode")


def test_zeroed_page_on_a_record_boundary_is_a_hole_not_the_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, placed = crashed_copy(tmp_path)
    offset, _ = placed[100]
    overwrite(root, offset, bytes(512))  # zeros exactly from a record's start: looks like the end
    reopen_and_check(root, caplog, offset, f"zeros at {offset} followed by data at")


def test_a_checkpoint_pointing_inside_a_record_does_not_cut_good_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, placed = crashed_copy(tmp_path)
    offset, size = placed[250]
    (root / "checkpoint.json").write_text(
        f'{{"commitLogFlushed": {offset + size // 2}, "dispatched": {offset + size // 2}}}'
    )
    with caplog.at_level(logging.WARNING, logger="longboat.store"):
        store = MessageStore(_config(root))
        store.open()
    try:
        assert any("not the start of a record" in r.getMessage() for r in caplog.records)
        assert not any("cut at offset" in r.getMessage() for r in caplog.records)
        last_offset, last_size = placed[-1]
        assert store.max_physical_offset == last_offset + last_size
        assert len(assert_consistent(store)) == len(placed)
    finally:
        store.close()
