"""Which commit-log segments retention deletes, and when (RocketMQ's CleanCommitLogService).

A segment is expired when every record in it is older than `file_reserved_time_hours`.  Its
age is read from the store time of the *next* segment's first record (a bound on its own last
record's time, and one that comes from the store's clock rather than file mtimes, so a fake
clock drives it in tests).  Expired segments go at hour `delete_when`, at once when the disk
passes `disk_max_used_space_ratio`, or when the caller forces it.  Past
`disk_space_clean_forcibly_ratio`, and only with `clean_file_forcibly_enable`, the oldest
segment goes even unexpired, one per round.

Disk use is measured as RocketMQ's watermarks mean it, with one difference: the next
commit-log segment counts as used before it exists.  Segments are allocated whole when the
log rolls into them, so a disk at 85 % with a segment of 16 % left to allocate is full in
all but name: without counting it, the roll fails with ENOSPC before any ratio is reached.

Never deleted: the segment being written, and anything not yet flushed (the flush thread may
be syncing it).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from longboat.store.commit_log import CommitLog
from longboat.store.config import StoreConfig


@dataclass(frozen=True, slots=True)
class DiskSpace:
    """Bytes used and in all on one filesystem."""

    used: int
    total: int


def filesystem_usage(path: Path) -> DiskSpace:
    """Use of the filesystem holding `path`."""
    usage = shutil.disk_usage(path)
    return DiskSpace(usage.used, usage.total)


class RetentionPolicy:
    def __init__(self, config: StoreConfig, disk_usage: Callable[[Path], DiskSpace]) -> None:
        self.config = config
        self._disk_usage = disk_usage

    def disk_ratio(self) -> float:
        """The used fraction of the store's filesystem once the next segment is allocated."""
        space = self._disk_usage(self.config.root_dir)
        if not space.total:
            return 0.0
        return (space.used + self.config.commit_log_segment_size) / space.total

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
        if force or hour == cfg.delete_when or ratio >= cfg.disk_max_used_space_ratio:
            reserved_ms = cfg.file_reserved_time_hours * 3_600_000
            for i in range(deletable):
                newest = log.first_store_timestamp(segments[i + 1])
                if newest is None or now_ms - newest < reserved_ms:
                    break
                count = i + 1
        if cfg.clean_file_forcibly_enable and ratio >= cfg.disk_space_clean_forcibly_ratio:
            count = max(count, 1)
        return count
