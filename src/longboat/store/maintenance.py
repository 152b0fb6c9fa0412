"""The store's maintenance thread: checkpoints, the disk check, retention, consumer offsets.

Every `checkpoint_interval_ms` the thread syncs the queues and index appended to since the
last round and records how far they and the log are durable (the checkpoint recovery trusts),
then checks the disk: past `disk_space_warning_level_ratio` appends are refused (`refusal` says
why, the append path reads it, and checks again itself before the log rolls into a new
segment) until retention or the operator frees space.  Every `retention_check_interval_ms` it
deletes expired commit-log segments (policy: retention); consumer offsets are snapshotted every
`consumer_offset_persist_interval_ms` when they changed, which compacts their journal (every
change is already journaled when it is made, see offsets), and the topic table's change log is
folded into its snapshot when it has grown long (topics).

A failing round is logged and the next one runs anyway.  The thread shares the store's append
lock for what must not interleave with an append: reading how far dispatch reached together
with the queues it dirtied, and deleting segments.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from longboat.store.checkpoint import Checkpoint, save_checkpoint
from longboat.store.commit_log import CommitLog
from longboat.store.config import StoreConfig
from longboat.store.index.key_index import KeyIndex
from longboat.store.offsets import ConsumerOffsetTable
from longboat.store.queue_table import QueueTable
from longboat.store.retention import RetentionPolicy
from longboat.store.topics import TopicConfigTable

log = logging.getLogger(__name__)


class StoreMaintenance:
    def __init__(
        self,
        config: StoreConfig,
        *,
        lock: threading.Lock,
        commit_log: CommitLog,
        queues: QueueTable,
        index: KeyIndex,
        offsets: ConsumerOffsetTable,
        topics: TopicConfigTable,
        retention: RetentionPolicy,
        clock: Callable[[], float],
        dispatched: Callable[[], int],
        newest_store_ms: Callable[[], int],
        is_open: Callable[[], bool],
    ) -> None:
        """`dispatched()` is the commit-log offset dispatch has reached, `newest_store_ms()`
        the newest store time given to a record and `is_open()` whether the store takes
        appends; all are read under `lock`."""
        self.config = config
        self._lock = lock
        self._log = commit_log
        self._queues = queues
        self._index = index
        self._offsets = offsets
        self._topics = topics
        self._retention = retention
        self._clock = clock
        self._dispatched = dispatched
        self._newest_store_ms = newest_store_ms
        self._is_open = is_open
        self.refusal: str | None = None  # why appends are refused (disk full), if they are
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="longboat-store-maintenance", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait for a round in progress to end."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def checkpoint(self) -> None:
        """Sync queues and index, then record how far they and the log are durable."""
        with self._lock:
            dispatched = self._dispatched()
            newest_store_ms = self._newest_store_ms()
            dirty = self._queues.take_dirty()
            index_dirty = self._index.take_dirty()
        for cq in dirty:
            cq.sync()
        self._index.sync(index_dirty)
        self._topics.sync()
        save_checkpoint(
            self.config.root_dir,
            Checkpoint(
                commit_log_flushed=self._log.flushed_offset,
                dispatched=dispatched,
                timestamp_ms=int(self._clock() * 1000),
                newest_store_ms=newest_store_ms,
            ),
        )

    def delete_expired(self, *, now_ms: int | None = None, force: bool = False) -> int:
        """Delete expired commit-log segments (see retention); move queue minimums past the
        deleted records and drop whole queue and index files that only pointed into them.
        Returns the number of commit-log segments deleted (0 when the store is not open)."""
        if now_ms is None:
            now_ms = int(self._clock() * 1000)
        with self._lock:
            if not self._is_open():
                return 0
            count = self._retention.segments_to_delete(self._log, now_ms, force=force)
            if not count:
                return 0
            dropped = self._log.chain.drop_head(count)
            log_min = self._log.min_offset
            self._queues.move_min(log_min)
            self._index.drop_below(log_min)
        log.info(
            "retention: deleted %d commit-log segment(s) from %d; the log now starts at %d",
            len(dropped),
            dropped[0].start,
            log_min,
        )
        return len(dropped)

    def check_disk(self) -> str | None:
        """Measure the disk (the next segment counted as used, see retention) and set
        `refusal` past `disk_space_warning_level_ratio`, clear it below; returns it.

        Caller: this thread every round, and the append path (under the store lock) before it
        allocates a segment, so a burst between two rounds cannot run the disk out.
        Affects: `refusal`, read without a lock by every append."""
        ratio = self._retention.disk_ratio()
        limit = self.config.disk_space_warning_level_ratio
        if ratio >= limit:
            if self.refusal is None:
                log.error("store: disk %.0f%% full with the next segment; refusing appends",
                          ratio * 100)  # fmt: skip
            self.refusal = disk_full(ratio, limit)
        elif self.refusal is not None:
            log.warning("store: disk back to %.0f%%; accepting appends", ratio * 100)
            self.refusal = None
        return self.refusal

    def _run(self) -> None:
        cfg = self.config
        tick = cfg.checkpoint_interval_ms / 1000
        started = time.monotonic()
        # The first retention round one interval after start, as every later one: a store
        # opened with a long interval (a test owning retention) sees none before it.
        next_retention = started + cfg.retention_check_interval_ms / 1000
        next_offsets = started
        while not self._stop.wait(tick):
            try:
                self.checkpoint()
                self.check_disk()
                now = time.monotonic()
                if now >= next_retention:
                    next_retention = now + cfg.retention_check_interval_ms / 1000
                    self.delete_expired()
                if now >= next_offsets and self._offsets.dirty:
                    next_offsets = now + cfg.consumer_offset_persist_interval_ms / 1000
                    self._offsets.persist()
                self._topics.compact()
            except Exception:
                log.exception("store maintenance failed; retrying next tick")


def disk_full(ratio: float, limit: float) -> str:
    """Why appends are refused: the disk's use (next segment counted) and the level passed."""
    return (
        f"the broker's disk is full [{ratio:.2f} with the next commit-log segment, "
        f"diskSpaceWarningLevelRatio {limit:.2f}]; appends resume once space is freed"
    )
