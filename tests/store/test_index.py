"""The key index across file rollovers, and its rebuild when a file is damaged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from longboat.protocol.message import decode_record
from longboat.store import MessageStore

from .helpers import message, small_config


def fill(store: MessageStore, count: int) -> None:
    for i in range(0, count, 10):
        batch = [message(body=b"%d" % (i + j), KEYS=f"k{(i + j) % 7} all", UNIQ_KEY=f"u{i + j}")
                 for j in range(10)]  # fmt: skip
        assert store.put_messages(batch).ok


def bodies(store: MessageStore, key: str, n: int = 1000) -> list[bytes]:
    return [decode_record(r).body for r in store.query_by_key("T", key, n, 0, 1 << 62)]


def test_queries_span_index_files(store_dir: Path) -> None:
    cfg = small_config(store_dir, index_max_entries=100)
    with MessageStore(cfg) as store:
        fill(store, 400)
        assert len(list((store_dir / "index").iterdir())) > 5
        assert bodies(store, "k3") == [b"%d" % i for i in range(399, -1, -1) if i % 7 == 3]
        assert bodies(store, "u123") == [b"123"]
        assert len(bodies(store, "all", 50)) == 50


def test_a_damaged_index_file_is_rebuilt_from_the_log(
    store_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = small_config(store_dir, index_max_entries=300)
    with MessageStore(cfg) as store:
        fill(store, 400)
    first = sorted((store_dir / "index").iterdir())[0]
    with first.open("r+b") as f:
        f.write(b"garbage!")
    with caplog.at_level(logging.WARNING, logger="longboat.store"):
        store = MessageStore(cfg)
        store.open()
    try:
        assert any("damaged" in r.getMessage() for r in caplog.records)
        assert bodies(store, "u5") == [b"5"]
        assert bodies(store, "k2") == [b"%d" % i for i in range(399, -1, -1) if i % 7 == 2]
    finally:
        store.close()
