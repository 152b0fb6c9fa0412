"""A replica's store fed a master's commit-log bytes (`append_replicated`), in chunks that cut
records anywhere: the same records at the same offsets, queues and index rebuilt as it goes,
arrival listeners told, and a crash with half a record in leaves a store that goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from longboat.protocol.message import decode_record
from longboat.store import MessageStore, StoreUsageError

from .helpers import assert_consistent, log_records, message, small_config


def copy_log(master: MessageStore, replica: MessageStore, chunk: int) -> None:
    """What a master's HA connection does: stream from the replica's end, `chunk` at most."""
    offset = replica.max_physical_offset
    while (data := master.commit_log_data(offset, chunk)) is not None:
        offset = replica.append_replicated(offset, data)


def fill(master: MessageStore, count: int) -> None:
    for i in range(count):
        body = f"message {i}".encode() * (1 + i % 50)
        master.put_message(message("T", i % 3, body, KEYS=f"k{i}", TAGS=f"tag{i % 2}"))


@pytest.mark.parametrize("chunk", [7, 100, 32 * 1024])
def test_the_replica_holds_the_masters_records_and_queues(tmp_path: Path, chunk: int) -> None:
    heard: list[tuple[str, int, int]] = []
    with (
        MessageStore(small_config(tmp_path / "master")) as master,
        MessageStore(small_config(tmp_path / "replica")) as replica,
    ):
        replica.add_arrival_listener(
            lambda t, q, new_max, code, props: heard.append((t, q, new_max))
        )
        fill(master, 300)  # several 64 KiB segments, with end-of-segment markers
        copy_log(master, replica, chunk)
        assert replica.max_physical_offset == master.max_physical_offset
        assert log_records(replica) == log_records(master)
        assert_consistent(replica)
        for queue_id in range(3):
            assert replica.max_offset("T", queue_id) == master.max_offset("T", queue_id)
        [found] = replica.query_by_key("T", "k299", 4, 0, 2**62)
        assert decode_record(found).body == b"message 299" * 50
        # Every queue's wake-up was heard, ending at its final max offset.
        last = {(t, q): m for t, q, m in heard}
        assert last == {("T", q): master.max_offset("T", q) for q in range(3)}


def test_bytes_not_at_the_replicas_end_are_refused(tmp_path: Path) -> None:
    with (
        MessageStore(small_config(tmp_path / "master")) as master,
        MessageStore(small_config(tmp_path / "replica")) as replica,
    ):
        fill(master, 5)
        data = master.commit_log_data(0, 1 << 20)
        assert data is not None
        replica.append_replicated(0, data[:50])
        with pytest.raises(StoreUsageError, match="this log ends at 50"):
            replica.append_replicated(60, data[60:])
        replica.append_replicated(50, data[50:])
        assert log_records(replica) == log_records(master)


def test_a_replica_stopped_inside_a_record_resumes_at_its_last_whole_one(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "master")) as master:
        fill(master, 40)
        data = master.commit_log_data(0, 1 << 20)
        assert data is not None
        replica = MessageStore(small_config(tmp_path / "replica"))
        replica.open()
        cut = len(data) // 2
        assert replica.append_replicated(0, data[:cut]) == cut  # its end, half a record in
        whole = [m for m in log_records(master) if m.commit_log_offset + m.store_size <= cut]
        assert replica.max_offset("T", 0) + replica.max_offset("T", 1) + replica.max_offset(
            "T", 2
        ) == len(whole)  # only whole records were dispatched
        replica.close()
        with MessageStore(small_config(tmp_path / "replica")) as reopened:
            # The half record is gone; the replica reports where its whole records end.
            assert log_records(reopened) == whole
            resume = reopened.max_physical_offset
            assert resume <= cut
            copy_log(master, reopened, 1000)
            assert log_records(reopened) == log_records(master)
            assert_consistent(reopened)
