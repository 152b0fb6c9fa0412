"""The consumer-offset table's journal: what a table that was never closed (a killed process)
left on disk is what the next one loads; compaction never loses a change; a torn last line is
ignored; the table asks its caller to wait for an fsync under SYNC_FLUSH and for a group's
first offset on a queue in every mode."""

from __future__ import annotations

from pathlib import Path

from longboat.store import ConsumerOffsetTable
from longboat.store.json_file import read_json


def loaded(path: Path, **kwargs: object) -> ConsumerOffsetTable:
    table = ConsumerOffsetTable(path, **kwargs)  # type: ignore[arg-type]
    table.load()
    return table


def test_a_table_never_closed_is_replayed_whole_across_compactions(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    before = loaded(path)
    before.commit("G", "T", 0, 5)
    before.commit("gone", "T", 0, 1)
    before.persist()  # a compaction between the changes
    before.commit("G", "T", 0, 9)
    before.commit("G", "U", 3, 2)
    before.remove_group("gone")
    before.take({"V@H": {1: 4}})
    # No close(): the process died here.
    after = loaded(path)
    assert (
        after.snapshot()
        == before.snapshot()
        == {
            "G": {"T": {0: 9}, "U": {3: 2}},
            "H": {"V": {1: 4}},
        }
    )
    before.close()
    after.close()


def test_compaction_drops_the_journal_files_its_snapshot_covers(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    table = loaded(path)
    table.commit("G", "T", 0, 5)
    table.persist()
    table.commit("G", "T", 0, 6)
    table.persist()
    data = read_json(path)
    assert data is not None
    journals = sorted(p.name for p in tmp_path.glob("consumerOffset.journal.*"))
    assert journals == [f"consumerOffset.journal.{data['journalGeneration']}"]
    assert data["offsetTable"] == {"T@G": {"0": 6}}
    table.close()


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    table = loaded(path)
    table.commit("G", "T", 0, 5)
    (journal,) = tmp_path.glob("consumerOffset.journal.*")
    with journal.open("ab") as f:
        f.write(b'["c","T","G",0,')  # the write a kill cut short: never answered
    assert loaded(path).snapshot() == {"G": {"T": {0: 5}}}
    table.close()


def test_the_caller_waits_for_an_fsync_per_commit_under_sync_flush(tmp_path: Path) -> None:
    table = loaded(tmp_path / "consumerOffset.json", sync_every_commit=True)
    for offset in (1, 2, 3):
        durable = table.commit("G", "T", 0, offset)
        assert durable is not None and durable.result(timeout=10)
    table.close()


def test_under_async_flush_only_a_groups_first_offset_on_a_queue_waits(tmp_path: Path) -> None:
    table = loaded(tmp_path / "consumerOffset.json", sync_every_commit=False)
    first = table.commit("G", "T", 0, 1)
    assert first is not None and first.result(timeout=10)
    assert table.commit("G", "T", 0, 2) is None
    other_queue = table.commit("G", "T", 1, 1)
    assert other_queue is not None and other_queue.result(timeout=10)
    table.close()


def test_an_unchanged_offset_writes_nothing(tmp_path: Path) -> None:
    table = loaded(tmp_path / "consumerOffset.json")
    first = table.commit("G", "T", 0, 7)
    assert first is not None and first.result(timeout=10)
    (journal,) = tmp_path.glob("consumerOffset.journal.*")
    size = journal.stat().st_size
    assert table.commit("G", "T", 0, 7) is None  # what idle pulls carry, again and again
    assert journal.stat().st_size == size
    table.close()


def test_an_offset_a_pull_carries_is_journaled_without_a_wait(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    table = loaded(path, sync_every_commit=True)
    assert table.commit("G", "T", 0, 4, answered=False) is None  # the pull answers messages
    # An answered update of that queue waits until its first offset is on disk.
    durable = table.commit("G", "T", 0, 5)
    assert durable is not None and durable.result(timeout=10)
    assert table.commit("G", "T", 0, 5) is None  # unchanged, and already on disk
    assert loaded(path).snapshot() == {"G": {"T": {0: 5}}}
    table.close()


def test_crashes_without_changes_leave_one_journal_file(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    table = loaded(path)
    table.commit("G", "T", 0, 1)
    table.close()
    for _ in range(3):
        loaded(path)  # started, then killed before any change
    assert len(list(tmp_path.glob("consumerOffset.journal.*"))) == 1
    assert loaded(path).snapshot() == {"G": {"T": {0: 1}}}
