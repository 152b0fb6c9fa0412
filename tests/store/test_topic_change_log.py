"""The topic table's change log: one appended line per change, a torn last line dropped,
compaction folding the log into the snapshot without losing a change made meanwhile, also
while topics are only created."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from longboat.protocol.bodies import TopicConfig
from longboat.store import TopicConfigTable
from longboat.store.topics import COMPACT_AFTER_CHANGES


def reloaded(path: Path) -> TopicConfigTable:
    table = TopicConfigTable(path)
    table.load()
    return table


def test_a_change_appends_a_line_and_leaves_the_snapshot_alone(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = TopicConfigTable(path)
    table.load()
    for i in range(50):
        table.put(TopicConfig(f"T{i}", 4, 4))
    assert table.delete("T7")
    assert not path.exists()  # nothing rewrote the table
    log = path.with_name("topics.json.log")
    assert len(log.read_bytes().splitlines()) == 51
    again = reloaded(path)
    assert set(again.all()) == {f"T{i}" for i in range(50)} - {"T7"}
    assert again.data_version == table.data_version


def test_a_torn_last_line_is_dropped_and_cut(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = TopicConfigTable(path)
    table.load()
    table.put(TopicConfig("Kept", 2, 2))
    table.close()
    log = path.with_name("topics.json.log")
    whole = log.read_bytes()
    log.write_bytes(whole + b'{"dataVersion":{"counter":2,"timest')
    again = reloaded(path)
    assert set(again.all()) == {"Kept"} and again.data_version.counter == 1
    assert log.read_bytes() == whole
    again.put(TopicConfig("Next", 1, 1))  # appends after the cut, not after the torn bytes
    assert set(reloaded(path).all()) == {"Kept", "Next"}


def test_compaction_folds_the_log_and_keeps_later_changes(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = TopicConfigTable(path)
    table.load()
    assert not table.compact()  # nothing logged yet
    for i in range(COMPACT_AFTER_CHANGES):
        table.put(TopicConfig(f"T{i}", 1, 1))
    assert table.compact()
    log = path.with_name("topics.json.log")
    assert log.read_bytes() == b""
    table.put(TopicConfig("After", 3, 3))
    table.delete("T0")
    again = reloaded(path)
    assert len(again.all()) == COMPACT_AFTER_CHANGES
    assert "After" in again.all() and "T0" not in again.all()
    assert again.data_version == table.data_version


def test_changes_the_snapshot_already_holds_are_not_replayed(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = TopicConfigTable(path)
    table.load()
    for i in range(COMPACT_AFTER_CHANGES):
        table.put(TopicConfig(f"T{i}", 1, 1))
    table.delete("T1")
    log = path.with_name("topics.json.log")
    before_cut = log.read_bytes()
    table.put(TopicConfig("T1", 5, 5))
    assert table.compact()
    # A log whose cut was lost, ending on a change older than the snapshot's last (T1
    # deleted, then put again): replaying it over the snapshot would delete T1.
    log.write_bytes(before_cut)
    again = reloaded(path)
    t1 = again.get("T1")
    assert t1 is not None and t1.read_queue_nums == 5
    assert again.data_version == table.data_version


def test_a_restart_replays_the_log_one_change_at_a_time(tmp_path: Path) -> None:
    """What a restart holds beyond the table it rebuilds is one change, not the whole log
    parsed: transient objects by the hundred thousand would leave the process's heap
    fragmented (and its memory high) for the rest of its life."""
    path = tmp_path / "topics.json"
    table = TopicConfigTable(path, sync_each_change=False)
    table.load()
    for i in range(20_000):
        table.put(TopicConfig(f"Topic-{i}", 8, 8))
    table.close()
    log_size = path.with_name("topics.json.log").stat().st_size
    tracemalloc.start()
    try:
        again = reloaded(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(again.all()) == 20_000
    assert peak - kept < log_size / 10  # the whole log parsed at once: several times its size


def test_creating_topics_only_folds_each_time_the_table_doubles(tmp_path: Path) -> None:
    """Creations alone (no topic changed twice) fold the log too: each fold waits for as many
    changes as the snapshot holds, so the log never holds more than half the table and the
    table is rewritten a logarithmic number of times."""
    path = tmp_path / "topics.json"
    log = path.with_name("topics.json.log")
    table = TopicConfigTable(path, sync_each_change=False)
    table.load()
    created = 6 * COMPACT_AFTER_CHANGES
    folded_at = []
    for i in range(created):
        table.put(TopicConfig(f"T{i}", 1, 1))
        if table.compact():  # as the maintenance thread would, here after every change
            folded_at.append(i + 1)
        if (i + 1) % 250 == 0:
            assert len(log.read_bytes().splitlines()) <= max(COMPACT_AFTER_CHANGES, (i + 1) // 2)
    assert folded_at == [COMPACT_AFTER_CHANGES, 2 * COMPACT_AFTER_CHANGES,
                         4 * COMPACT_AFTER_CHANGES]  # fmt: skip
    assert len(log.read_bytes().splitlines()) == 2 * COMPACT_AFTER_CHANGES
    table.close()
    again = reloaded(path)
    assert len(again.all()) == created and again.data_version == table.data_version


@pytest.mark.parametrize("killed", ["before the snapshot was in place", "before the log's cut"])
def test_a_crash_while_creations_fold_loses_no_topic(tmp_path: Path, killed: str) -> None:
    """A process killed while folding a log of creations leaves either the old snapshot and
    the whole log (the new snapshot is renamed into place whole, or not at all) or the new
    snapshot and the whole log (not yet cut): either way every topic is back."""
    path = tmp_path / "topics.json"
    log = path.with_name("topics.json.log")
    table = TopicConfigTable(path, sync_each_change=False)
    table.load()
    for i in range(COMPACT_AFTER_CHANGES):
        table.put(TopicConfig(f"T{i}", 1, 1))
    assert table.compact()
    for i in range(COMPACT_AFTER_CHANGES, 2 * COMPACT_AFTER_CHANGES):
        table.put(TopicConfig(f"T{i}", 1, 1))
    snapshot, changes = path.read_bytes(), log.read_bytes()
    assert table.compact()
    table.close()
    log.write_bytes(changes)
    if killed == "before the snapshot was in place":
        path.write_bytes(snapshot)
    again = reloaded(path)
    assert set(again.all()) == {f"T{i}" for i in range(2 * COMPACT_AFTER_CHANGES)}
    assert again.data_version == table.data_version
