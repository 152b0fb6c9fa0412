"""Store settings, with RocketMQ's names and defaults (MessageStoreConfig)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class FlushDiskType(StrEnum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Fixed once built: the store sizes its files and threads from these at open, so a
    change means a new config (`dataclasses.replace`) for a new store."""

    root_dir: Path
    # Commit-log segment size; RocketMQ's default is 1 GiB.  Tests use KiBs.
    commit_log_segment_size: int = 1024 * 1024 * 1024
    # Consume-queue entries per segment file (20 bytes each).
    consume_queue_entries_per_file: int = 300_000
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_ms: int = 500
    sync_flush_timeout_ms: int = 5000
    max_message_size: int = 4 * 1024 * 1024
    # Retention: hours a segment is kept, hour of day for deletion.
    file_reserved_time_hours: float = 72.0
    delete_when: int = 4
    # Disk watermarks, as fractions of the filesystem holding `root_dir`, counting the next
    # commit-log segment's reservation as used (see retention).  RocketMQ's
    # diskMaxUsedSpaceRatio: past it expired segments go at once, whatever the hour.
    disk_max_used_space_ratio: float = 0.75
    # RocketMQ's diskSpaceCleanForciblyRatio: past it retention runs every disk check, and
    # with `clean_file_forcibly_enable` the oldest segment goes even unexpired (unconsumed
    # messages with it); without, only expired ones do and appends stop at the warning level.
    disk_space_clean_forcibly_ratio: float = 0.85
    clean_file_forcibly_enable: bool = True
    # RocketMQ's diskSpaceWarningLevelRatio: past it appends are refused (SERVICE_NOT_AVAILABLE)
    # until retention or the operator frees space; they resume by themselves.
    disk_space_warning_level_ratio: float = 0.90
    # Address written into every record's store-host field and into offset message ids.
    store_host: str = "127.0.0.1"
    store_port: int = 10911
    # Key index files: hash slots and entries per file (RocketMQ's defaults; files are sparse).
    index_hash_slots: int = 5_000_000
    index_max_entries: int = 20_000_000
    # How often queues and index are synced and the checkpoint written (bounds the log a
    # crash recovery re-reads), retention is considered, and consumer offsets are persisted.
    checkpoint_interval_ms: int = 1000
    retention_check_interval_ms: int = 10_000
    consumer_offset_persist_interval_ms: int = 5000
    # Pull transfer limits per reply.
    max_transfer_bytes: int = 256 * 1024
    max_transfer_count: int = 32
    # Light message queues (`lmq`): a message's INNER_MULTI_DISPATCH `%LMQ%` queues get an
    # entry too.  Off: the property is an ordinary one.
    enable_multi_dispatch: bool = False

    @property
    def sync_flush(self) -> bool:
        """Whether an append waits for a sync of the log (its result's `durable` future)."""
        return self.flush_disk_type == FlushDiskType.SYNC_FLUSH

    @property
    def commit_log_dir(self) -> Path:
        return self.root_dir / "commitlog"

    @property
    def consume_queue_dir(self) -> Path:
        return self.root_dir / "consumequeue"

    @property
    def index_dir(self) -> Path:
        return self.root_dir / "index"

    @property
    def config_dir(self) -> Path:
        return self.root_dir / "config"
