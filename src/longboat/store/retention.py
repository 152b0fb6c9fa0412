"""Which commit-log segments retention deletes, and when (RocketMQ's CleanCommitLogService).

A segment is expired when every record in it is older than `file_reserved_time_hours`.  Its
age is read from the store time of the *next* segment's first record (a bound on its own last
record's time, and one that comes from the store's clock rather than file mtimes, so a fake
clock drives it in tests).  Expired segments go at hour `delete_when`, at once when the disk
passes `disk_max_used_ratio`, or when the caller forces it.  Past
`disk_space_clean_forcibly_ratio` the oldest segment goes even unexpired, one per check.

Never deleted: the segment being written, and anything not yet flushed (the flush thread may
be syncing it).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from longboat.store.commit_log import CommitLog
from longboat.store.config import StoreConfig


def filesystem_usage(path: Path) -> float:
    """The used fraction of the filesystem holding `path`."""
    usage = shutil.disk_usage(path)
    return usage.used / usage.total if usage.total else 0.0


class RetentionPolicy:
    def __init__(self, config: StoreConfig, disk_usage: Callable[[Path], float]) -> None:
        self.config = config
        self._disk_usage = disk_usage

    def disk_ratio(self) -> float:
        return self._disk_usage(self.config.root_dir)

    def segments_to_delete(self, log: CommitLog, now_ms: int, *, force: bool) -> int:
        """How many of the log's first segments to delete now."""
        cfg = self.config
        segments = log.chain.segments
        deletable = 0
        for seg in segments[:-1]:
            if seg.end > log.flushed_offset:
                break
            deletable += 1
        if not deletable:
            return 0
        ratio = self.disk_ratio()
        hour = time.localtime(now_ms / 1000).tm_hour
        count = 0
        if force or hour == cfg.delete_when or ratio >= cfg.disk_max_used_ratio:
            reserved_ms = cfg.file_reserved_time_hours * 3_600_000
            for i in range(deletable):
                newest = log.first_store_timestamp(segments[i + 1])
                if newest is None or now_ms - newest < reserved_ms:
                    break
                count = i + 1
        if ratio >= cfg.disk_space_clean_forcibly_ratio:
            count = max(count, 1)
        return count
