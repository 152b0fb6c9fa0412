"""Light message queues in the store (`store/lmq.py`): a record dispatched to its queue and to
each `%LMQ%` queue its INNER_MULTI_DISPATCH names, its offset in each written back, and the
LMQ entries rebuilt from the records alone by recovery."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from longboat.protocol.message import decode_record
from longboat.store import GetStatus, MessageInner, MessageStore, StoreConfig
from longboat.store.lmq import INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET

from .helpers import small_config

LMQS = ("%LMQ%a", "%LMQ%b")


def lmq_config(root: Path) -> StoreConfig:
    # No periodic checkpoint: recovery re-reads everything written in the run.
    return small_config(root, enable_multi_dispatch=True, checkpoint_interval_ms=3_600_000)


@contextmanager
def recovered(store: MessageStore, root: Path, *lost: str) -> Iterator[MessageStore]:
    """`store` (its files under `root/live`) as a crash leaves it, LMQs `lost` without their
    queue files, opened again.  The spare queue directories, which the store's spares thread
    fills and takes while the copy runs, are left out: a new LMQ's may still be one, lost as
    a crash loses a spare, so it may have no file to remove."""
    store.flush()
    crashed = root / "crashed"
    shutil.copytree(root / "live", crashed, ignore=shutil.ignore_patterns(".spare"))
    store.close()
    for name in lost:
        shutil.rmtree(crashed / "consumequeue" / name, ignore_errors=True)
    again = MessageStore(lmq_config(crashed))
    again.open()
    try:
        yield again
    finally:
        again.close()


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
    # The crash lost an LMQ's queue files: recovery writes them again from the records.
    with recovered(store, tmp_path, LMQS[1]) as again:
        assert lmq_bodies(again, LMQS[1]) == [b"m1", b"m3", b"m5"]
        assert lmq_bodies(again, LMQS[0]) == [b"m%d" % i for i in range(6)]


def test_only_lmq_names_without_a_path_are_dispatched_and_recovered(tmp_path: Path) -> None:
    store = MessageStore(lmq_config(tmp_path / "live"))
    store.open()
    # A plain name and one reaching out of the queue directory are skipped, as RocketMQ does.
    names = f"Plain,%LMQ%../../escape,{LMQS[0]},{LMQS[1]}"
    result = store.put_message(MessageInner("T", 0, b"m", {INNER_MULTI_DISPATCH: names}))
    assert result.ok
    stored = store.read_message(result.records[0].commit_log_offset)
    # One offset per name, at its position (RocketMQ's Java client finds its LMQ's by the
    # position of its name); empty for the names skipped.
    assert stored is not None and stored.properties[INNER_MULTI_QUEUE_OFFSET] == ",,0,0"
    assert not (tmp_path / "escape").exists() and not (tmp_path / "live" / "escape").exists()
    # Each offset read back with its own name, the skipped ones not counted.
    with recovered(store, tmp_path, *LMQS) as again:
        assert lmq_bodies(again, LMQS[0]) == [b"m"]
        assert lmq_bodies(again, LMQS[1]) == [b"m"]


def test_messages_on_their_way_reach_their_lmqs_only_in_their_real_topic(tmp_path: Path) -> None:
    """A delay level's, a timer's or a retry topic's record is dispatched to no LMQ, by the
    append nor by recovery (RocketMQ's topicAllowsLMQ): a delayed message reaches its LMQs
    once, when it is stored in its real topic.  A dead letter is, its old offsets replaced."""
    store = MessageStore(lmq_config(tmp_path / "live"))
    store.open()
    props = {INNER_MULTI_DISPATCH: LMQS[0]}
    for topic in ("SCHEDULE_TOPIC_XXXX", "rmq_sys_wheel_timer", "%RETRY%g"):
        assert store.put_message(MessageInner(topic, 0, b"waiting", dict(props))).ok
    due = store.put_message(MessageInner("T", 0, b"due", dict(props)))
    dead = {**props, INNER_MULTI_QUEUE_OFFSET: "7"}  # copied from the message it once was
    last = store.put_message(MessageInner("%DLQ%g", 0, b"dead", dead))
    assert due.ok and last.ok
    assert lmq_bodies(store, LMQS[0]) == [b"due", b"dead"]
    stored = store.read_message(last.records[0].commit_log_offset)
    assert stored is not None and stored.properties[INNER_MULTI_QUEUE_OFFSET] == "1"
    with recovered(store, tmp_path, LMQS[0]) as again:
        assert lmq_bodies(again, LMQS[0]) == [b"due", b"dead"]
