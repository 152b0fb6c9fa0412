"""Consume-queue files made ahead of need: a new queue takes a spare directory, more than the
spares on hand still works, and a restart neither lists the spares as a topic nor loses them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from longboat.store import GetStatus, MessageStore, PutStatus
from longboat.store.queue_spares import KEEP, SPARE_DIR, QueueSpares
from longboat.store.segments import MappedSegment, segment_name

from .helpers import message, small_config


def wait_for(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_taken_spare_is_written_at_once_and_moved_into_place(tmp_path: Path) -> None:
    spares = QueueSpares(tmp_path, 1200, keep=2)
    spares.start()
    try:
        spare_dir = tmp_path / SPARE_DIR
        wait_for(lambda: len(list(spare_dir.iterdir())) == 2, "two spares")
        segment = spares.take(tmp_path / "T" / "3")
        assert segment is not None and segment.placed is not None
        segment.write(0, b"entry")
        segment.sync()  # waits for the move
        moved = tmp_path / "T" / "3" / segment_name(0)
        assert segment.path == moved and moved.read_bytes()[:5] == b"entry"
        wait_for(lambda: len(list(spare_dir.iterdir())) == 2, "the spare made again")
        segment.close()
    finally:
        spares.close()


def test_a_new_queue_finding_no_spare_ready_doubles_the_reserve(tmp_path: Path) -> None:
    spares = QueueSpares(tmp_path, 1200, keep=1)
    spares.start()
    try:
        spare_dir = tmp_path / SPARE_DIR
        wait_for(lambda: len(list(spare_dir.iterdir())) == 1, "one spare")
        taken: list[MappedSegment] = []
        while (segment := spares.take(tmp_path / "T" / str(len(taken)))) is not None:
            taken.append(segment)
        for segment in taken:  # moved out of the spare directory
            assert segment.placed is not None and segment.placed.wait(30)
        wait_for(lambda: len(list(spare_dir.iterdir())) == 2, "two spares kept from now on")
        for segment in taken:
            segment.close()
    finally:
        spares.close()


def test_a_spare_holding_data_at_open_is_dropped_not_reused(tmp_path: Path) -> None:
    """The process died between a take and its move: the spare's entries belong to a queue."""
    spares = QueueSpares(tmp_path, 1200, keep=1)
    spares.start()
    wait_for(lambda: len(list((tmp_path / SPARE_DIR).iterdir())) == 1, "a spare")
    spares.close()
    (left,) = (tmp_path / SPARE_DIR).iterdir()
    with (left / segment_name(0)).open("r+b") as f:
        f.write(b"\x01" * 20)
    again = QueueSpares(tmp_path, 1200, keep=1)
    again.start()
    try:
        assert not left.exists()
        segment = again.take(tmp_path / "T" / "0")
        assert segment is None or segment.read(0, 20) == bytes(20)
    finally:
        again.close()


def test_new_queues_past_the_spares_on_hand_store_and_survive_a_restart(tmp_path: Path) -> None:
    queues = 3 * KEEP  # more than the thread keeps ready: some create their own files
    with MessageStore(small_config(tmp_path)) as store:
        for i in range(queues):
            put = store.put_message(message(f"T{i % 7}", i, body=b"%d" % i))
            assert put.status is PutStatus.PUT_OK
    with MessageStore(small_config(tmp_path)) as store:
        assert store.topics() == sorted(f"T{i}" for i in range(7))
        for i in range(queues):
            got = store.get_messages(f"T{i % 7}", i, 0, 1)
            assert got.status is GetStatus.FOUND and got.queue_offsets == [0]
        assert store.put_message(message("New", 0)).status is PutStatus.PUT_OK
