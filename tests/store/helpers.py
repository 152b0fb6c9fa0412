"""Store test helpers: small segments so tests cross many files quickly."""

from __future__ import annotations

from pathlib import Path

from longboat.store import MessageInner, StoreConfig


def small_config(root: Path, **overrides: object) -> StoreConfig:
    cfg = StoreConfig(
        root_dir=root,
        commit_log_segment_size=64 * 1024,
        consume_queue_entries_per_file=64,
        index_hash_slots=1024,
        index_max_entries=4096,
        checkpoint_interval_ms=50,
    )
    for name, value in overrides.items():
        setattr(cfg, name, value)
    return cfg


def message(topic: str = "T", queue_id: int = 0, body: bytes = b"x", **props: str) -> MessageInner:
    return MessageInner(topic=topic, queue_id=queue_id, body=body, properties=dict(props))
