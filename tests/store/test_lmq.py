"""Light message queues in the store (`store/lmq.py`): a record dispatched to its queue and to
each `%LMQ%` queue its INNER_MULTI_DISPATCH names, its offset in each written back, and the
LMQ entries rebuilt from the records alone by recovery."""

from __future__ import annotations

import shutil
from pathlib import Path

from longboat.protocol.message import decode_record
from longboat.store import GetStatus, MessageInner, MessageStore, StoreConfig
from longboat.store.lmq import INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET

from .helpers import small_config

LMQS = ("%LMQ%a", "%LMQ%b")


def lmq_config(root: Path) -> StoreConfig:
    # No periodic checkpoint: recovery re-reads everything written in the run.
    return small_config(root, enable_multi_dispatch=True, checkpoint_interval_ms=3_600_000)


def lmq_bodies(store: MessageStore, lmq: str) -> list[bytes]:
    got = store.get_messages(lmq, 0, 0, 32)
    assert got.status is GetStatus.FOUND
    return [decode_record(record).body for record in got.records]


def test_lmq_entries_are_rebuilt_by_recovery(tmp_path: Path) -> None:
    store = MessageStore(lmq_config(tmp_path / "live"))
    store.open()
    for i in range(6):
        names = ",".join(LMQS) if i % 2 else LMQS[0]
        result = store.put_message(MessageInner("T", 0, b"m%d" % i, {INNER_MULTI_DISPATCH: names}))
        assert result.ok
    last = store.read_message(result.records[0].commit_log_offset)
    assert last is not None and last.properties[INNER_MULTI_QUEUE_OFFSET] == "5,2"
    assert lmq_bodies(store, LMQS[0]) == [b"m%d" % i for i in range(6)]
    assert lmq_bodies(store, LMQS[1]) == [b"m1", b"m3", b"m5"]
    store.flush()
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "live", crashed)
    store.close()
    # The crash lost the LMQ queue files: recovery writes them again from the records.
    shutil.rmtree(crashed / "consumequeue" / LMQS[1])
    again = MessageStore(lmq_config(crashed))
    again.open()
    try:
        assert lmq_bodies(again, LMQS[1]) == [b"m1", b"m3", b"m5"]
        assert lmq_bodies(again, LMQS[0]) == [b"m%d" % i for i in range(6)]
    finally:
        again.close()


def test_only_lmq_names_without_a_path_are_dispatched_and_recovered(tmp_path: Path) -> None:
    store = MessageStore(lmq_config(tmp_path / "live"))
    store.open()
    # A plain name and one reaching out of the queue directory are skipped, as RocketMQ does.
    names = f"Plain,%LMQ%../../escape,{LMQS[0]},{LMQS[1]}"
    result = store.put_message(MessageInner("T", 0, b"m", {INNER_MULTI_DISPATCH: names}))
    assert result.ok
    stored = store.read_message(result.records[0].commit_log_offset)
    assert stored is not None and stored.properties[INNER_MULTI_QUEUE_OFFSET] == "0,0"
    assert not (tmp_path / "escape").exists() and not (tmp_path / "live" / "escape").exists()
    store.flush()
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "live", crashed)
    store.close()
    shutil.rmtree(crashed / "consumequeue" / LMQS[0])
    shutil.rmtree(crashed / "consumequeue" / LMQS[1])
    again = MessageStore(lmq_config(crashed))
    again.open()
    try:  # each offset read back with its own name, the skipped ones not counted
        assert lmq_bodies(again, LMQS[0]) == [b"m"]
        assert lmq_bodies(again, LMQS[1]) == [b"m"]
    finally:
        again.close()
