"""The broker's storage engine, RocketMQ's design: one commit log, consume queues derived from
it in-line, a key index, group-commit flushing, crash recovery and retention.  No networking:
the broker drives it from its event loop and reads arrivals through a listener."""

from __future__ import annotations

from longboat.store.config import FlushDiskType, StoreConfig
from longboat.store.errors import StoreCorruptedError, StoreError, StoreUsageError
from longboat.store.message_inner import EncodedBatch, MessageInner
from longboat.store.message_store import MessageStore
from longboat.store.offsets import ConsumerOffsetTable
from longboat.store.results import (
    Appended,
    AppendedRecord,
    GetResult,
    GetStatus,
    PutResult,
    PutStatus,
)
from longboat.store.topics import TopicConfigTable

__all__ = [
    "Appended",
    "AppendedRecord",
    "ConsumerOffsetTable",
    "EncodedBatch",
    "FlushDiskType",
    "GetResult",
    "GetStatus",
    "MessageInner",
    "MessageStore",
    "PutResult",
    "PutStatus",
    "StoreConfig",
    "StoreCorruptedError",
    "StoreError",
    "StoreUsageError",
    "TopicConfigTable",
]
