"""The key index's slot table: written in a private map, copied into its file page by page."""

from __future__ import annotations

import mmap
import os
import random
import resource
import struct
from pathlib import Path

from longboat.store.index.slot_table import SlotTable, Written

HEADER = 48
SLOTS = 64 * 1024  # 256 KiB of slots: 64 pages


def table_file(tmp_path: Path) -> Path:
    path = tmp_path / "0"
    with open(path, "wb") as f:
        f.truncate(HEADER + SLOTS * 4 + 4096)
    return path


def file_slots(path: Path) -> list[int]:
    data = path.read_bytes()[HEADER : HEADER + SLOTS * 4]
    return list(struct.unpack(f"<{SLOTS}I", data))


def write(table: SlotTable, values: dict[int, int]) -> None:
    for slot, value in values.items():
        table.heads[slot] = value
    table.written(list(values))


def test_slots_reach_the_file_at_write_back_and_leave_the_header_alone(tmp_path: Path) -> None:
    """Slot 0 shares its page with the header, which the index writes through another map
    meanwhile: the write-back must copy the slots and never the header bytes before them."""
    path = table_file(tmp_path)
    table = SlotTable(path, HEADER, SLOTS)
    try:
        values = {0: 7, 1: 8, 1023: 9, 5000: 10, SLOTS - 1: 11}
        write(table, values)
        with open(path, "r+b") as f:  # the header, written after the page was copied
            f.write(b"H" * HEADER)
        assert set(file_slots(path)) == {0}  # nothing written back yet
        table.write_back(table.take_written())
        on_disk = file_slots(path)
        assert {i: v for i, v in enumerate(on_disk) if v} == values
        assert path.read_bytes()[:HEADER] == b"H" * HEADER
        write(table, {5000: 12})
    finally:
        table.close()  # what is still noted is written back
    assert file_slots(path)[5000] == 12
    reopened = SlotTable(path, HEADER, SLOTS)
    try:
        assert reopened.heads[5000] == 12 and reopened.heads[SLOTS - 1] == 11
    finally:
        reopened.drop()


def test_a_write_back_writes_only_the_pages_written_to(tmp_path: Path) -> None:
    """The table is sparse on disk until written: a sync of a few slots stores their pages,
    not the whole table."""
    path = table_file(tmp_path)
    table = SlotTable(path, HEADER, SLOTS)
    try:
        write(table, {100: 1, 30_000: 2, 30_001: 3})
        table.write_back(table.take_written())
    finally:
        table.drop()
    assert os.stat(path).st_blocks * 512 <= 4 * mmap.PAGESIZE


def test_slot_writes_after_a_sync_take_no_page_faults(tmp_path: Path) -> None:
    """The reason for the private map: through a shared one, each sync write-protects the
    pages it cleaned and the next write to each faults again; here a page faults once."""
    path = table_file(tmp_path)
    table = SlotTable(path, HEADER, SLOTS)
    rnd = random.Random(5)
    slots = [rnd.randrange(SLOTS) for _ in range(20_000)]
    heads = table.heads

    def faults_writing() -> int:
        """Faults of this thread while it writes every slot of `slots` (nothing allocated)."""
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        for slot in slots:
            heads[slot] = 1
        return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before

    try:
        assert faults_writing() >= SLOTS * 4 // mmap.PAGESIZE // 2  # first writes: copies
        table.write_back(Written(whole=True))
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)  # what the index's sync does next: it cleans the file's pages
        finally:
            os.close(fd)
        assert faults_writing() <= 2
    finally:
        table.drop()


def test_past_a_few_slots_a_page_the_whole_table_is_written_back(tmp_path: Path) -> None:
    """Once the slots noted are several times the pages, nearly every page was written to:
    the notes are dropped (what waits for a write-back stays small) and the whole table is
    copied, the pages never written to included."""
    path = table_file(tmp_path)
    table = SlotTable(path, HEADER, SLOTS)
    values = {slot: slot + 1 for slot in range(3, SLOTS, 97)}  # 676 slots, ~10 a page
    items = list(values.items())
    try:
        for i in range(0, len(items), 8):
            write(table, dict(items[i : i + 8]))
        pending = table.take_written()
        assert pending.whole and not pending.batches
        table.write_back(pending)
    finally:
        table.drop()
    assert {i: v for i, v in enumerate(file_slots(path)) if v} == values


def test_a_write_back_after_the_table_was_dropped_does_nothing(tmp_path: Path) -> None:
    """Retention may delete an index file while a checkpoint holds its pending slot writes
    (the checkpoint writes back outside the store's lock): the write-back then has nothing
    to keep, and neither fails nor writes."""
    path = table_file(tmp_path)
    table = SlotTable(path, HEADER, SLOTS)
    write(table, {7: 1})
    pending = table.take_written()
    table.drop()
    path.unlink()
    table.write_back(pending)
    assert not path.exists()
