"""Consume-queue files made ahead of need: a new queue takes a spare directory, more than the
spares on hand still works, and a restart neither lists the spares as a topic nor loses them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from longboat.store import GetStatus, MessageStore, PutStatus
from longboat.store.queue_spares import KEEP, SPARE_DIR, QueueSpares
from longboat.store.segments import segment_name

from .helpers import message, small_config


def wait_for(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_spare_is_moved_into_place_with_its_empty_first_segment(tmp_path: Path) -> None:
    spares = QueueSpares(tmp_path, 1200, keep=2)
    spares.start()
    try:
        spare_dir = tmp_path / SPARE_DIR
        wait_for(lambda: len(list(spare_dir.iterdir())) == 4, "two queue and two topic spares")
        assert spares.place(tmp_path / "T" / "3")
        segment = tmp_path / "T" / "3" / segment_name(0)
        assert segment.stat().st_size == 1200 and segment.read_bytes() == bytes(1200)
        wait_for(lambda: len(list(spare_dir.iterdir())) == 4, "the spares made again")
    finally:
        spares.close()


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
