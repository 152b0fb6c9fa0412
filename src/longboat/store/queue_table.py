"""The store's consume queues, by (topic, queue id), and what can be asked of one queue.

A queue exists once a message was appended to it or its files were found at open; it is never
removed while the store is open (retention only moves its minimum).  Creating a queue and
appending to it happen under the store's append lock; the lookups here take no lock, which is
safe because a dict lookup is atomic and each queue's `max_offset` moves only after its entries
are written (see consume_queue).

Store-time questions (`store_time_at`, `offset_by_timestamp`) read the record an entry points
at, so the table holds the commit log to decode them.

Queues found on disk at open are mapped on first use, not at open: a restart costs what must be
recovered (the queues the recovery scan re-dispatches), not one map and search per queue
stored, and the memory of queues nobody reads stays on disk.  What open would have done to a
queue is done when it is mapped: entries pointing at or past `trusted_end` (the end recovery
verified; before the scan, where the scan starts) are dropped, and its minimum moved past
what retention deleted.  A queue is loaded once, under `_loading`, by whichever thread asks
first; readers that find it loaded take no lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from longboat.store.commit_log import CommitLog
from longboat.store.consume_queue import ENTRY, ENTRY_SIZE, ConsumeQueue
from longboat.store.queue_spares import SPARE_DIR, QueueSpares


class QueueTable:
    def __init__(self, root: Path, entries_per_file: int, commit_log: CommitLog) -> None:
        self._root = root
        self._entries_per_file = entries_per_file
        self._log = commit_log
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._topics: dict[str, set[int]] = {}
        # Found on disk at open, not mapped yet (see the module's docstring).
        self._unloaded: set[tuple[str, int]] = set()
        self._loading = threading.Lock()
        self.trusted_end: int | None = None
        self._spares = QueueSpares(root, entries_per_file * ENTRY_SIZE)
        # Queues appended to since the last checkpoint synced them (under the append lock).
        self.dirty: set[ConsumeQueue] = set()

    def load(self) -> None:
        """Note every queue found on disk (each is mapped when first asked for) and start
        making spare queue files (queue_spares)."""
        self._root.mkdir(parents=True, exist_ok=True)
        for topic_dir in self._root.iterdir():
            if not topic_dir.is_dir() or topic_dir.name == SPARE_DIR:
                continue
            for queue_dir in topic_dir.iterdir():
                if queue_dir.is_dir() and queue_dir.name.isdigit():
                    key = (topic_dir.name, int(queue_dir.name))
                    self._unloaded.add(key)
                    self._topics.setdefault(key[0], set()).add(key[1])
        self._spares.start()

    def trust_below(self, log_offset: int) -> None:
        """Drop every entry pointing at or past `log_offset`, in the queues mapped and in
        those mapped later (recovery: where its scan starts, then the end it verified)."""
        self.trusted_end = log_offset
        for cq in self:
            cq.truncate_to_log(log_offset)

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        cq = self._queues.get((topic, queue_id))
        if cq is None and (topic, queue_id) in self._unloaded:
            cq = self._load_one(topic, queue_id)
        return cq

    def _load_one(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        key = (topic, queue_id)
        with self._loading:
            cq = self._queues.get(key)
            if cq is not None or key not in self._unloaded:
                return cq
            cq = self._new_queue(topic, queue_id)
            cq.load(self._log.min_offset)
            if self.trusted_end is not None:
                cq.truncate_to_log(self.trusted_end)
            self._queues[key] = cq
            self._unloaded.discard(key)
            return cq

    def _new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        return ConsumeQueue(
            self._root, topic, queue_id, self._entries_per_file, adopt=self._spares.take
        )

    def get_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        """Caller: the append path and recovery, under the store's lock (or before open ends)."""
        cq = self.get(topic, queue_id)
        if cq is None:
            cq = self._new_queue(topic, queue_id)
            self._queues[(topic, queue_id)] = cq
            self._topics.setdefault(topic, set()).add(queue_id)
        return cq

    def __iter__(self) -> Iterator[ConsumeQueue]:
        """Every queue mapped; a snapshot, so a queue created meanwhile does not break the
        loop.  (A queue not mapped yet has nothing to sync, and gets what retention and
        recovery did to the others when it is mapped.)"""
        return iter(list(self._queues.values()))

    def take_dirty(self) -> set[ConsumeQueue]:
        """The queues to sync at a checkpoint, forgetting them (caller holds the store's lock)."""
        dirty, self.dirty = self.dirty, set()
        return dirty

    # ------------------------------------------------------------------ questions

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(self._topics.get(topic, ()))

    def topics(self) -> list[str]:
        return sorted(self._topics)

    def max_offset(self, topic: str, queue_id: int) -> int:
        cq = self.get(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def min_offset(self, topic: str, queue_id: int) -> int:
        cq = self.get(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def tags_codes(self, topic: str, queue_id: int, offset: int, count: int) -> list[int]:
        """The tags codes of up to `count` entries from `offset` (fewer at a segment's end;
        none past the max): what a scan by tags code needs, without a commit-log read."""
        cq = self.get(topic, queue_id)
        if cq is None:
            return []
        raw = cq.read_entries(offset, count)
        return [tags for _, _, tags in ENTRY.iter_unpack(raw)]

    def offset_by_timestamp(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first queue offset stored at or after `timestamp_ms` (max offset if none)."""
        cq = self.get(topic, queue_id)
        if cq is None:
            return 0
        return cq.offset_by_store_time(timestamp_ms, self._store_time_of_record)

    def _store_time_of_record(self, commit_log_offset: int) -> int:
        msg = self._log.decode_at(commit_log_offset)
        return msg.store_timestamp if msg is not None else 0

    def earliest_store_time(self, topic: str, queue_id: int) -> int:
        """Store time of the queue's first message, -1 if it has none."""
        cq = self.get(topic, queue_id)
        if cq is None:
            return -1
        ts = self.store_time_at(topic, queue_id, cq.min_offset)
        return -1 if ts is None else ts

    def store_time_at(self, topic: str, queue_id: int, offset: int) -> int | None:
        """Store time of the message at a queue offset (None outside [min, max))."""
        cq = self.get(topic, queue_id)
        entry = cq.entry(offset) if cq is not None else None
        if entry is None:
            return None
        msg = self._log.decode_at(entry[0])
        return msg.store_timestamp if msg is not None else None

    def newest_store_time(self) -> int:
        """The store time of the last record in any queue (0 if none), so store times keep
        increasing after a restart even if the wall clock went back.  It maps every queue:
        only for a checkpoint written before checkpoints recorded that time."""
        for topic, queue_id in list(self._unloaded):
            self.get(topic, queue_id)
        newest = 0
        for cq in self:
            if cq.max_offset > cq.min_offset:
                newest = max(
                    newest, self.store_time_at(cq.topic, cq.queue_id, cq.max_offset - 1) or 0
                )
        return newest

    @property
    def disk_bytes(self) -> int:
        unloaded = sum(
            path.stat().st_blocks * 512
            for topic, queue_id in list(self._unloaded)
            for path in (self._root / topic / str(queue_id)).iterdir()
        )
        return unloaded + sum(cq.chain.disk_bytes for cq in self)

    # ------------------------------------------------------------------ retention, closing

    def move_min(self, log_min_offset: int) -> None:
        """Move every queue's minimum past entries whose records retention deleted."""
        for cq in self:
            cq.move_min(log_min_offset)

    def close(self) -> None:
        self._spares.close()
        for cq in self:
            cq.close()
