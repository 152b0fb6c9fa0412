"""Consumer offsets, topic configs and the atomic JSON files under them."""

from __future__ import annotations

from pathlib import Path

import pytest

from longboat.protocol.bodies import TopicConfig
from longboat.store import ConsumerOffsetTable, MessageStore, TopicConfigTable
from longboat.store.json_file import read_json, write_json_atomic

from .helpers import small_config


def test_offsets_survive_a_restart_and_are_rocketmq_shaped(store_dir: Path) -> None:
    with MessageStore(small_config(store_dir)) as store:
        store.offsets.commit("G1", "T", 0, 42)
        store.offsets.commit("G1", "T", 3, 7)
        store.offsets.commit("G2", "%RETRY%G2", 0, 1)
        assert store.offsets.query("G1", "T", 0) == 42
        assert store.offsets.query("G1", "T", 1) is None
    raw = read_json(store_dir / "config" / "consumerOffset.json")
    assert raw is not None and raw["offsetTable"]["T@G1"] == {"0": 42, "3": 7}
    with MessageStore(small_config(store_dir)) as store:
        assert store.offsets.snapshot() == {"G1": {"T": {0: 42, 3: 7}}, "G2": {"%RETRY%G2": {0: 1}}}
        store.offsets.remove_group("G2")
        store.offsets.remove_topic("T")
        assert store.offsets.snapshot() == {"G1": {}}


def test_topic_configs_bump_the_data_version_and_persist(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    table = TopicConfigTable(path, clock=lambda: 1000.0)
    table.load()
    table.put(TopicConfig("Orders", read_queue_nums=8, write_queue_nums=8))
    table.put(TopicConfig("Audit"))
    assert table.data_version.counter == 2 and table.data_version.timestamp == 1_000_000
    assert table.delete("Audit") and not table.delete("Audit")
    again = TopicConfigTable(path)
    again.load()
    assert set(again.all()) == {"Orders"}
    orders = again.get("Orders")
    assert orders is not None and orders.read_queue_nums == 8
    assert again.data_version.counter == 3


def test_atomic_write_leaves_old_or_new_never_half(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_json_atomic(path, {"v": 1})
    # A crash mid-write leaves only a stray temporary file beside the real one.
    path.with_name(path.name + ".tmp").write_bytes(b'{"v": 2, "trunc')
    assert read_json(path) == {"v": 1}
    write_json_atomic(path, {"v": 3})
    assert read_json(path) == {"v": 3}
    assert read_json(tmp_path / "missing.json") is None


def test_a_damaged_file_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    path.write_bytes(b"{not json")
    with pytest.raises(ValueError, match=r"consumerOffset\.json"):
        ConsumerOffsetTable(path).load()
