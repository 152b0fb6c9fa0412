"""The broker's storage engine: commit log, consume queues, key index, flush, recovery, retention.

`MessageStore` is the facade other packages call: it wires the parts, owns the lifecycle
(`lifecycle`: open, recover, close) and answers reads.  The parts each have a module: the
append path (`append`) with who hears of appends (`arrivals`) and the key-index entries
written after them (`index.writer`); the consume queues and the questions asked of them
(`queue_table`, `queue_read`); the maintenance thread with checkpoints, the disk check and
retention (`maintenance`); the key index and lookups by key (`index`); flushing (`flush`);
recovery (`recovery`).

One lock (`_lock`) serialises what must be atomic: assigning queue and commit-log offsets,
copying records in, writing their queue and index entries, and moving files (retention,
recovery).  Reads take no lock: they read `max_offset` first and only then the entries and
records below it, which were complete before it moved; a file deleted under a read makes
that read report the data as gone, never return other bytes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.store.admission import Admission
from longboat.store.append import Appender
from longboat.store.arrivals import ArrivalListener, Arrivals
from longboat.store.checkpoint import create_abort_marker, load_checkpoint, remove_abort_marker
from longboat.store.commit_log import CommitLog
from longboat.store.config import StoreConfig
from longboat.store.errors import StoreUsageError
from longboat.store.flush import FlushService
from longboat.store.index import query
from longboat.store.index.key_index import KeyIndex
from longboat.store.index.writer import IndexWriter
from longboat.store.lifecycle import Lifecycle, StoreState
from longboat.store.maintenance import StoreMaintenance
from longboat.store.message_inner import EncodedBatch, MessageInner
from longboat.store.offsets import ConsumerOffsetTable
from longboat.store.queue_read import read_queue
from longboat.store.queue_table import QueueTable
from longboat.store.recovery import RecoveryReport, recover
from longboat.store.results import GetResult, GetStatus, PutResult
from longboat.store.retention import DiskSpace, RetentionPolicy, filesystem_usage
from longboat.store.topics import TopicConfigTable

__all__ = ["ArrivalListener", "MessageStore"]

log = logging.getLogger(__name__)


class MessageStore:
    def __init__(
        self,
        config: StoreConfig,
        *,
        clock: Callable[[], float] = time.time,
        tags_code_resolver: Callable[[MessageExt], int | None] | None = None,
        disk_usage: Callable[[Path], DiskSpace] = filesystem_usage,
    ) -> None:
        """`tags_code_resolver` recomputes a tags code that was overridden at put time
        (`MessageInner.tags_code`) when recovery rebuilds a queue from the log; it returns
        None to fall back to the TAGS hash.  `disk_usage` returns the bytes used and in all on
        the filesystem holding a path (tests pass a fake)."""
        self.config = config
        self._tags_code_resolver = tags_code_resolver
        self._lock = threading.Lock()
        self._life = Lifecycle()
        self._log = CommitLog(config.commit_log_dir, config.commit_log_segment_size)
        self._queues = QueueTable(
            config.consume_queue_dir, config.consume_queue_entries_per_file, self._log
        )
        self._index = KeyIndex(config.index_dir, config.index_hash_slots, config.index_max_entries)
        self._indexer = IndexWriter(self._index, self._lock)
        self._arrivals = Arrivals()
        self._admission = Admission(config.max_message_size)
        self._sync = config.sync_flush
        self._flusher = FlushService(
            self._log.flush, config.flush_interval_ms / 1000 if not self._sync else 1.0
        )
        self.offsets = ConsumerOffsetTable(
            config.config_dir / "consumerOffset.json",
            sync_every_commit=self._sync,
            flush_interval_s=config.flush_interval_ms / 1000,
        )
        self.topic_configs = TopicConfigTable(
            config.config_dir / "topics.json", clock=clock, sync_each_change=self._sync
        )
        indexer, life = self._indexer, self._life
        self._maintenance = StoreMaintenance(
            config,
            lock=self._lock,
            commit_log=self._log,
            queues=self._queues,
            index=self._index,
            offsets=self.offsets,
            topics=self.topic_configs,
            retention=RetentionPolicy(config, disk_usage),
            clock=clock,
            dispatched=lambda: indexer.dispatched,
            newest_store_ms=lambda: self._appender.last_store_ms,
            is_open=lambda: life.is_open,
        )
        self._appender = Appender(
            config,
            lock=self._lock,
            lifecycle=self._life,
            commit_log=self._log,
            queues=self._queues,
            indexer=self._indexer,
            arrivals=self._arrivals,
            flusher=self._flusher,
            admission=self._admission,
            maintenance=self._maintenance,
            clock=clock,
            tags_code_of=self._recovered_tags_code,
        )
        self.last_recovery: RecoveryReport | None = None

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Load the files, recover (clean or unclean), start the flush and maintenance threads.

        Raises StoreUsageError when called twice, StoreCorruptedError when the files are
        damaged beyond what recovery repairs on its own, OSError on I/O failure."""
        if self._life.state is not StoreState.NEW:
            raise StoreUsageError(f"open() on a store that is {self._life.state.value}")
        cfg = self.config
        cfg.root_dir.mkdir(parents=True, exist_ok=True)
        checkpoint = load_checkpoint(cfg.root_dir)
        unclean = create_abort_marker(cfg.root_dir)
        short_at = self._log.load()
        if checkpoint is None:
            scan_from = self._log.min_offset
        elif unclean:
            scan_from = checkpoint.recover_from
        else:
            scan_from = checkpoint.dispatched
        if short_at is not None:
            log.warning("commit log: a segment file ends early at offset %d", short_at)
            scan_from = min(scan_from, short_at - short_at % cfg.commit_log_segment_size)
        scan_from = max(scan_from, self._log.min_offset)
        if unclean:
            log.warning("store: the last run did not close cleanly; recovering from %d", scan_from)
        self._queues.load()
        # The checkpoint covers the index as it covers the queues; only a damaged or missing
        # index sends recovery further back.
        rebuild_index_from = self._index.load(self._log.min_offset)
        index_from = scan_from if rebuild_index_from is None else min(scan_from, rebuild_index_from)
        if index_from < scan_from:
            log.warning("key index: rebuilding it from commit-log offset %d", index_from)
        self.last_recovery = recover(
            self._log,
            self._queues,
            self._index,
            scan_from=scan_from,
            index_from=index_from,
            tags_code_of=self._recovered_tags_code,
        )
        self._indexer.dispatched = self._log.write_offset
        if checkpoint is None or checkpoint.newest_store_ms is None:
            self._appender.last_store_ms = self._queues.newest_store_time()
        else:
            self._appender.last_store_ms = max(
                checkpoint.newest_store_ms, self.last_recovery.newest_store_ms
            )
        self._log.flush()
        self._maintenance.checkpoint()
        self.offsets.load()
        self.topic_configs.load()
        self._life.state = StoreState.OPEN
        if not self._sync:
            self._log.prefault_ahead()
        self._flusher.start()
        self._maintenance.start()

    def close(self) -> None:
        """Flush, checkpoint, remove the abort marker; idempotent."""
        with self._lock:
            if self._life.state is not StoreState.OPEN:
                self._life.state = StoreState.CLOSED
                return
            self._indexer.write()  # an append still telling its listeners: its entries
            self._life.state = StoreState.CLOSED
        self._maintenance.stop()
        self._flusher.stop()
        self._maintenance.checkpoint()
        self.offsets.close()
        self.topic_configs.close()
        with self._lock:
            self._queues.close()
            self._index.close()
            self._log.close()
        remove_abort_marker(self.config.root_dir)

    def __enter__(self) -> MessageStore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recovered_tags_code(self, msg: MessageExt) -> int:
        if self._tags_code_resolver is not None:
            code = self._tags_code_resolver(msg)
            if code is not None:
                return code
        return self._admission.tags_code(msg.properties.get(Prop.TAGS))

    # ------------------------------------------------------------------ listeners

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """`listener(topic, queue_id, new_max_offset, tags_code, properties)` is called on
        the appending thread once the queue entries of an append exist (a reader sees them).
        A batch calls it once per distinct tags code, with the batch's final max offset and
        the properties of the first message with that code.  It must be quick and must not
        raise (exceptions are logged and dropped)."""
        self._arrivals.add_listener(listener)

    def observe_appends(self, observer: Callable[[int], None]) -> None:
        """`observer(end)` hears the commit log's new end after every append, on the appending
        thread (a master's replication wakes its senders with it); it must be quick."""
        self._arrivals.add_observer(observer)

    # ------------------------------------------------------------------ appending

    def put_message(self, msg: MessageInner) -> PutResult:
        return self._appender.put_messages([msg])

    def put_messages(self, msgs: list[MessageInner]) -> PutResult:
        """Append a batch (one topic/queue) contiguously.  Validation comes first:
        MESSAGE_ILLEGAL / PROPERTIES_SIZE_EXCEEDED with `error` and nothing written.  Under
        SYNC_FLUSH the result's `durable` future resolves once an fsync covers the batch.
        SERVICE_NOT_AVAILABLE outside OPEN or while the disk is too full."""
        return self._appender.put_messages(msgs)

    def put_encoded_batch(self, batch: EncodedBatch) -> PutResult:
        """`put_messages` for a batch whose messages keep their encoded properties (the
        broker's SEND_BATCH_MESSAGE path); the same checks, records and result."""
        return self._appender.put_encoded_batch(batch)

    def defer_indexing(self, later: Callable[[Callable[[], None]], object]) -> None:
        """Write each append's key-index entries through `later(write)` instead of before
        the append returns (the broker passes a timer on its loop; see `IndexWriter.defer`).
        Appends must then all come from the thread `later` runs callbacks on."""
        self._indexer.defer(later)

    def append_replicated(self, offset: int, data: bytes) -> int:
        """Copy a master's commit-log bytes in at `offset` (this log's end; any segment
        boundary while the log is empty) and dispatch the whole records they complete: queue
        entries at the queue offsets the records carry, index entries, arrival listeners told.
        Bytes may end inside a record: it is dispatched when its rest arrives.  Returns the
        log's new end.  Raises StoreUsageError when the store is not open or `offset` is not
        where this log ends (the replica must reconnect and report its end again)."""
        return self._appender.append_replicated(offset, data)

    def cut_log(self, offset: int, reason: str) -> None:
        """Cut the open commit log at `offset`: a former master that rejoins its group as a
        slave while it runs drops the tail its new master does not hold (`truncate.py` does
        the same to a closed store).  Appends wait meanwhile; every queue entry pointing at or
        past `offset` goes, in the queues mapped and in those mapped later; index entries of
        cut records stay, as lookups re-read the record.  Call it from the thread that reads
        the store (the broker's event loop), so no read sees a file half cut.  The files are
        cut at once; the maintenance thread's next checkpoint records it (a crash before that
        recovers from files already cut).

        Raises StoreUsageError when the store is not open."""
        with self._lock:
            if self._life.state is not StoreState.OPEN:
                raise StoreUsageError(f"cut_log() on a store that is {self._life.state.value}")
            self._indexer.write()
            if offset >= self._log.write_offset:
                return
            self._log.cut(offset, reason)
            self._queues.trust_below(offset)
            self._indexer.dispatched = min(self._indexer.dispatched, self._log.write_offset)

    def commit_log_data(self, offset: int, max_bytes: int) -> bytes | None:
        """Up to `max_bytes` of the commit log from `offset`, within one segment and below
        its end (what a master streams to a replica); None at the end or below the start."""
        return self._log.segment_data(offset, max_bytes)

    def flush(self) -> int:
        """Make everything appended so far durable now; returns the commit-log offset covered.
        (Under SYNC_FLUSH appends already wait for this; under ASYNC_FLUSH it is what the
        flush thread does every interval.)"""
        return self._log.flush()

    # ------------------------------------------------------------------ reading

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msgs: int,
        *,
        max_bytes: int | None = None,
        tag_filter: Callable[[int], bool] | None = None,
        record_filter: Callable[[bytes], bool] | None = None,
    ) -> GetResult:
        """Up to `max_msgs` stored records from queue `offset`, by RocketMQ's decision table
        (see queue_read); `tag_filter` sees each entry's tags code, `record_filter` each
        record the tag filter let through."""
        return read_queue(
            self._queues.get(topic, queue_id),
            self._log,
            offset,
            max_msgs,
            max_bytes=self.config.max_transfer_bytes if max_bytes is None else max_bytes,
            max_count=self.config.max_transfer_count,
            tag_filter=tag_filter,
            record_filter=record_filter,
        )

    def message_at(self, topic: str, queue_id: int, offset: int) -> MessageExt | None:
        """The message at one queue offset, decoded; None when the queue holds none there
        (removed, not yet written) or its record does not decode (a torn or foreign one)."""
        got = self.get_messages(topic, queue_id, offset, 1)
        if got.status is not GetStatus.FOUND or got.queue_offsets[0] != offset:
            return None
        try:
            return decode_record(got.records[0])
        except ProtocolError:
            return None

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self._queues.max_offset(topic, queue_id)

    def min_offset(self, topic: str, queue_id: int) -> int:
        return self._queues.min_offset(topic, queue_id)

    def tags_codes(self, topic: str, queue_id: int, offset: int, count: int) -> list[int]:
        """The tags codes of up to `count` consume-queue entries from `offset` (fewer at a
        file's end, none past the max); the timer queue keeps each message's due time there."""
        return self._queues.tags_codes(topic, queue_id, offset, count)

    def offset_by_timestamp(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first queue offset stored at or after `timestamp_ms` (max offset if none)."""
        return self._queues.offset_by_timestamp(topic, queue_id, timestamp_ms)

    def earliest_store_time(self, topic: str, queue_id: int) -> int:
        """Store time of the queue's first message, -1 if it has none."""
        return self._queues.earliest_store_time(topic, queue_id)

    def store_time_at(self, topic: str, queue_id: int, offset: int) -> int | None:
        """Store time of the message at a queue offset (None outside [min, max))."""
        return self._queues.store_time_at(topic, queue_id, offset)

    def read_record(self, commit_log_offset: int) -> bytes | None:
        """The stored record at a commit-log offset, None when no record starts there."""
        return self._log.read_record(commit_log_offset)

    def read_log(self, commit_log_offset: int, size: int) -> bytes | None:
        """Raw commit-log bytes (within one segment), for replication and tools; None when
        the range is not (or no longer) in the log."""
        return self._log.read(commit_log_offset, size)

    def read_message(self, commit_log_offset: int) -> MessageExt | None:
        return self._log.decode_at(commit_log_offset)

    def query_by_key(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int
    ) -> list[bytes]:
        """Stored records of `topic` whose KEYS include `key` or whose UNIQ_KEY is `key`,
        stored within [begin_ms, end_ms], newest first, at most `max_num`."""
        self._indexer.catch_up()  # entries of returned appends, deferred (`defer_indexing`)
        return query.query_by_key(self._index, self._log, topic, key, max_num, begin_ms, end_ms)

    def queue_ids(self, topic: str) -> list[int]:
        return self._queues.queue_ids(topic)

    def topics(self) -> list[str]:
        return self._queues.topics()

    # ------------------------------------------------------------------ retention

    def delete_expired(self, *, now_ms: int | None = None, force: bool = False) -> int:
        """Delete expired commit-log segments now rather than at the maintenance thread's next
        retention round (see maintenance); returns how many were deleted."""
        return self._maintenance.delete_expired(now_ms=now_ms, force=force)

    # ------------------------------------------------------------------ figures

    @property
    def max_physical_offset(self) -> int:
        return self._log.write_offset

    @property
    def min_physical_offset(self) -> int:
        return self._log.min_offset

    @property
    def dispatched_physical_offset(self) -> int:
        """Equal to max_physical_offset whenever no append is in progress (dispatch is in-line)
        and no deferred index write is pending (`defer_indexing`); exposed so a dispatch-lag
        metric reads the same as RocketMQ's."""
        return self._indexer.dispatched

    @property
    def flushed_physical_offset(self) -> int:
        return self._log.flushed_offset

    @property
    def disk_bytes(self) -> int:
        """Bytes the store's files occupy on disk."""
        return self._log.chain.disk_bytes + self._index.disk_bytes + self._queues.disk_bytes

    def observe_flushes(self, on_sync: Callable[[float], None] | None) -> None:
        """`on_sync(seconds)` hears the duration of every commit-log sync, on the flush
        thread (it must be quick and thread-safe)."""
        self._flusher.on_sync = on_sync

    @property
    def flush_stats(self) -> tuple[int, int]:
        """(syncs run, durability requests served): under SYNC_FLUSH with concurrent writers
        the first is well below the second (group commit)."""
        return self._flusher.syncs, self._flusher.requests
