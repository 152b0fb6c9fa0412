"""The broker's storage engine: commit log, consume queues, key index, flush, recovery, retention.

`MessageStore` is the facade other packages call, and owns the lifecycle and the append path
(admission, copy into the log, in-line dispatch, arrival listeners).  The parts it wires each
have a module: the consume queues and the questions asked of them (`queue_table`), the
maintenance thread with checkpoints, the disk check and retention (`maintenance`), lookups by
key (`key_query`), flushing (`flush`), recovery (`recovery`).

One lock (`_lock`) serialises what must be atomic: assigning queue and commit-log offsets,
copying records in, writing their queue and index entries, and moving files (retention,
recovery).  Reads take no lock: they read `max_offset` first and only then the entries and
records below it, which were complete before it moved; a file deleted under a read makes
that read report the data as gone, never return other bytes.

Dispatch is in-line: by the time `put_messages` returns, the queue entry exists and the
arrival listeners have been told, on the appending thread (microseconds after the copy).
There is no dispatch thread to fall behind, poll, or lose a wake-up.  The key index is written
after the listeners are told, not before (`_index_appended`): a parked pull is woken without
waiting for the index entries, whose slots lie on random pages of a large file (a page fault
each while a fresh index file fills).  The append returns once they are written, unless the
owner defers them (`defer_indexing`): the broker has them written just after the append's
answer leaves, off the producer's round trip.  Either way a lookup by key sees every append
that has returned, since it first writes any entries still pending.

Lifecycle (state as data):

    NEW --open()--> OPEN --close()--> CLOSED
    OPEN: puts accepted; flush and maintenance threads running; abort marker present.
    close() is idempotent; puts outside OPEN answer SERVICE_NOT_AVAILABLE.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections.abc import Callable, Mapping
from enum import Enum
from itertools import accumulate
from pathlib import Path

from longboat.protocol.ids import host_bytes, offset_msg_id_prefix
from longboat.protocol.message import (
    POS_PHYSICALOFFSET,
    MessageExt,
    RecordParts,
    encode_record_batch,
)
from longboat.protocol.properties import Prop, RawProperties
from longboat.store import key_query
from longboat.store.admission import Admission, Admitted
from longboat.store.checkpoint import create_abort_marker, load_checkpoint, remove_abort_marker
from longboat.store.commit_log import CommitLog
from longboat.store.config import FlushDiskType, StoreConfig
from longboat.store.consume_queue import ENTRY
from longboat.store.errors import StoreUsageError
from longboat.store.flush import FlushService
from longboat.store.index import KeyIndex, topic_seed
from longboat.store.index_keys import encoded_batch_hashes
from longboat.store.maintenance import StoreMaintenance
from longboat.store.message_inner import EncodedBatch, MessageInner
from longboat.store.offsets import ConsumerOffsetTable
from longboat.store.queue_read import read_queue
from longboat.store.queue_table import QueueTable
from longboat.store.recovery import RecoveryReport, recover
from longboat.store.redispatch import Redispatch
from longboat.store.results import Appended, GetResult, PutResult, PutStatus
from longboat.store.retention import RetentionPolicy, filesystem_usage
from longboat.store.topics import TopicConfigTable

log = logging.getLogger(__name__)

ArrivalListener = Callable[[str, int, int, int, Mapping[str, str]], None]

_PHYS = struct.Struct(">q")


class _State(Enum):
    NEW = "NEW"
    OPEN = "OPEN"
    CLOSED = "CLOSED"


class MessageStore:
    def __init__(
        self,
        config: StoreConfig,
        *,
        clock: Callable[[], float] = time.time,
        tags_code_resolver: Callable[[MessageExt], int | None] | None = None,
        disk_usage: Callable[[Path], float] = filesystem_usage,
    ) -> None:
        """`tags_code_resolver` recomputes a tags code that was overridden at put time
        (`MessageInner.tags_code`) when recovery rebuilds a queue from the log; it returns
        None to fall back to the TAGS hash.  `disk_usage` returns the used fraction of the
        filesystem holding a path (tests pass a fake)."""
        self.config = config
        self._clock = clock
        self._tags_code_resolver = tags_code_resolver
        self._lock = threading.Lock()
        self._state = _State.NEW
        self._log = CommitLog(config.commit_log_dir, config.commit_log_segment_size)
        self._queues = QueueTable(
            config.consume_queue_dir, config.consume_queue_entries_per_file, self._log
        )
        self._index = KeyIndex(config.index_dir, config.index_hash_slots, config.index_max_entries)
        self._listeners: list[ArrivalListener] = []
        self._append_observers: list[Callable[[int], None]] = []
        self._admission = Admission(config.max_message_size)
        self._store_host = host_bytes(config.store_host)
        self._store_port = config.store_port
        self._msg_id_prefix = offset_msg_id_prefix(self._store_host, config.store_port)
        self._last_store_ms = 0
        self._dispatched = 0
        # Appends whose index entries are not written yet, in log order (see
        # `_index_appended`): (topic, messages (body, properties, flag), commit-log offsets,
        # store time, end of the append's records).
        self._unindexed: list[tuple[str, list[RecordParts], list[int], int, int]] = []
        # Set by `defer_indexing`: how the appending thread has the entries written later.
        self._index_later: Callable[[Callable[[], None]], object] | None = None
        self._index_pending = False
        self._sync = config.flush_disk_type == FlushDiskType.SYNC_FLUSH
        self._flusher = FlushService(
            self._log.flush, config.flush_interval_ms / 1000 if not self._sync else 1.0
        )
        self.offsets = ConsumerOffsetTable(config.config_dir / "consumerOffset.json")
        self.topic_configs = TopicConfigTable(
            config.config_dir / "topics.json", clock=clock, sync_each_change=self._sync
        )
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
            dispatched=lambda: self._dispatched,
            newest_store_ms=lambda: self._last_store_ms,
            is_open=lambda: self._state is _State.OPEN,
        )
        self.last_recovery: RecoveryReport | None = None

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Load the files, recover (clean or unclean), start the flush and maintenance threads.

        Raises StoreUsageError when called twice, StoreCorruptedError when the files are
        damaged beyond what recovery repairs on its own, OSError on I/O failure."""
        if self._state is not _State.NEW:
            raise StoreUsageError(f"open() on a store that is {self._state.value}")
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
        self._dispatched = self._log.write_offset
        if checkpoint is None or checkpoint.newest_store_ms is None:
            self._last_store_ms = self._queues.newest_store_time()
        else:
            self._last_store_ms = max(
                checkpoint.newest_store_ms, self.last_recovery.newest_store_ms
            )
        self._log.flush()
        self._maintenance.checkpoint()
        self.offsets.load()
        self.topic_configs.load()
        self._state = _State.OPEN
        if not self._sync:
            self._log.prefault_ahead()
        self._flusher.start()
        self._maintenance.start()

    def close(self) -> None:
        """Flush, checkpoint, remove the abort marker; idempotent."""
        with self._lock:
            if self._state is not _State.OPEN:
                self._state = _State.CLOSED
                return
            self._index_appended()  # an append still telling its listeners: its entries
            self._state = _State.CLOSED
        self._maintenance.stop()
        self._flusher.stop()
        self._maintenance.checkpoint()
        self.offsets.persist()
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
        self._listeners = [*self._listeners, listener]

    def observe_appends(self, observer: Callable[[int], None]) -> None:
        """`observer(end)` hears the commit log's new end after every append, on the appending
        thread (a master's replication wakes its senders with it); it must be quick."""
        self._append_observers = [*self._append_observers, observer]

    # ------------------------------------------------------------------ appending

    def put_message(self, msg: MessageInner) -> PutResult:
        return self.put_messages([msg])

    def put_messages(self, msgs: list[MessageInner]) -> PutResult:
        """Append a batch (one topic/queue) contiguously.  Validation comes first:
        MESSAGE_ILLEGAL / PROPERTIES_SIZE_EXCEEDED with `error` and nothing written.  Under
        SYNC_FLUSH the result's `durable` future resolves once an fsync covers the batch."""
        admitted = self._admission.admit(msgs)
        if type(admitted) is PutResult:
            return admitted
        assert type(admitted) is Admitted
        return self._put(admitted, lambda i: msgs[i].properties)

    def put_encoded_batch(self, batch: EncodedBatch) -> PutResult:
        """`put_messages` for a batch whose messages keep their encoded properties (the
        broker's SEND_BATCH_MESSAGE path); the same checks, records and result."""
        admitted = self._admission.admit_encoded(batch)
        if type(admitted) is PutResult:
            return admitted
        assert type(admitted) is Admitted
        messages = admitted.messages
        return self._put(admitted, lambda i: RawProperties(messages[i][1]))

    def _put(
        self, admitted: Admitted, properties_of: Callable[[int], Mapping[str, str]]
    ) -> PutResult:
        """Append an admitted batch; `properties_of(i)` gives message i's properties to the
        arrival listeners (parsed only for the few messages they are told about)."""
        refusal = self._maintenance.refusal
        if refusal is not None:
            return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, error=refusal)
        topic = admitted.topic
        queue_id = admitted.queue_id
        try:
            with self._lock:
                if self._state is not _State.OPEN:
                    return PutResult(
                        PutStatus.SERVICE_NOT_AVAILABLE, error=f"the store is {self._state.value}"
                    )
                result = self._append(admitted)
                if result.status is not PutStatus.PUT_OK:
                    return result
                new_max = self._queues.max_offset(topic, queue_id)
        except OSError as exc:
            log.error("commit log: append failed: %s", exc)
            return PutResult(PutStatus.UNKNOWN_ERROR, error=f"append failed: {exc}")
        listeners = self._listeners
        try:
            if listeners:
                self._notify(listeners, topic, queue_id, new_max, properties_of, admitted)
        finally:
            if self._index_later is None:
                with self._lock:
                    self._index_appended()
            elif not self._index_pending:
                self._index_pending = True
                self._index_later(self._index_deferred)
        for observer in self._append_observers:
            observer(self._log.write_offset)
        return result

    def defer_indexing(self, later: Callable[[Callable[[], None]], object]) -> None:
        """Write each append's key-index entries through `later(write)` instead of before
        the append returns.  The broker passes its loop's `call_soon`: a send's answer is
        written in the callback that appended, so the entries follow it out instead of
        delaying it (one batch in flight waits for its answer before sending the next).
        Appends must then all come from the thread `later` runs callbacks on."""
        self._index_later = later

    def _index_deferred(self) -> None:
        with self._lock:
            self._index_pending = False
            self._index_appended()

    def _index_appended(self) -> None:
        """Write the index entries of the appends made so far, in log order, and count their
        records dispatched.  Caller holds the lock.  Any appending thread may write another's:
        entries stay in log order whoever writes them, and `_dispatched` (what a checkpoint
        records and recovery re-indexes from) never passes an entry not yet written."""
        unindexed = self._unindexed
        if not unindexed:
            return
        self._unindexed = []
        # Every append waiting is indexed in one call: under load the broker's deferred
        # indexing finds several here, and the index writes a batch at a time.
        hashes: list[int] = []
        owners: list[int] = []
        stamps: list[int] = []
        for topic, messages, offsets, stored_ms, _ in unindexed:
            # m[1]: the message's encoded properties, as stored.
            found, at = encoded_batch_hashes(topic_seed(topic), [m[1] for m in messages], offsets)
            hashes += found
            owners += at
            stamps += [stored_ms] * len(found)
        end = unindexed[-1][4]
        try:
            self._index.add(hashes, owners, stamps, end)
        except OSError as exc:
            # The records are stored and their queue entries written: the appends stand,
            # only lookups by key miss these (as RocketMQ's index does).
            log.error(
                "key index: %d entries below log offset %d not written: %s", len(hashes), end, exc
            )
        self._dispatched = end

    def append_replicated(self, offset: int, data: bytes) -> int:
        """Copy a master's commit-log bytes in at `offset` (this log's end; any segment
        boundary while the log is empty) and dispatch the whole records they complete: queue
        entries at the queue offsets the records carry, index entries, arrival listeners told.
        Bytes may end inside a record: it is dispatched when its rest arrives.  Returns the
        log's new end.  Raises StoreUsageError when the store is not open or `offset` is not
        where this log ends (the replica must reconnect and report its end again)."""
        notify: dict[tuple[str, int, int], dict[str, str]] = {}
        with self._lock:
            if self._state is not _State.OPEN:
                raise StoreUsageError(f"replicated append on a store that is {self._state.value}")
            log_ = self._log
            try:
                log_.write_replicated(offset, data)
            except ValueError as exc:
                raise StoreUsageError(str(exc)) from None
            self._index_appended()
            if self._dispatched < log_.min_offset:
                self._dispatched = log_.min_offset  # a new replica's first segment
            scan = log_.scan(self._dispatched, limit=log_.write_offset)
            redispatch = Redispatch(self._queues, self._index, self._recovered_tags_code)
            for msg in scan:
                code = redispatch.add(msg)
                if code is not None:
                    notify.setdefault((msg.topic, msg.queue_id, code), msg.properties)
                self._last_store_ms = max(self._last_store_ms, msg.store_timestamp)
            touched = redispatch.finish(scan.end)
            if scan.problem is not None:
                log_.set_end(scan.end, scan.problem)  # keep what was whole; refuse the rest
                raise StoreUsageError(f"replicated bytes do not hold valid records: {scan.problem}")
            for cq in touched:
                self._queues.dirty.add(cq)
            self._dispatched = max(self._dispatched, scan.end)
            end = log_.write_offset
        if self._sync:
            self._flusher.request(end)
        listeners = self._listeners
        for (topic, queue_id, code), properties in notify.items():
            new_max = self._queues.max_offset(topic, queue_id)
            for listener in listeners:
                try:
                    listener(topic, queue_id, new_max, code, properties)
                except Exception:
                    log.exception("arrival listener %r failed", listener)
        return end

    def _append(self, admitted: Admitted) -> PutResult:
        """Encode, copy in, write the queue entries; the index entries wait for
        `_index_appended`.  Caller holds the lock."""
        topic, queue_id = admitted.topic, admitted.queue_id
        # A new queue is registered only once its first record is written: a refused append
        # leaves no trace, in memory or on disk.
        cq = self._queues.get(topic, queue_id)
        now = int(self._clock() * 1000)
        if now < self._last_store_ms:
            now = self._last_store_ms  # store times never go back along the log
        self._last_store_ms = now
        commit_log = self._log
        start = commit_log.write_offset
        first_queue_offset = cq.max_offset if cq is not None else 0
        consumable = admitted.consumable
        if consumable is None:
            queue_offsets: list[int] = list(
                range(first_queue_offset, first_queue_offset + len(admitted.messages))
            )
        else:
            # Prepared and rolled-back halves of transactions get no queue entry (offset 0).
            queue_offsets = []
            next_offset = first_queue_offset
            for plain in consumable:
                queue_offsets.append(next_offset if plain else 0)
                next_offset += plain
        host, port = self._store_host, self._store_port
        data, sizes = encode_record_batch(
            topic=admitted.topic_bytes,
            queue_id=queue_id,
            commit_log_offset=start,
            store_timestamp=now,
            store_host=host,
            store_port=port,
            messages=admitted.messages,
            senders=admitted.senders,
            queue_offsets=queue_offsets,
        )
        size = len(data)
        if size > commit_log.max_record_size:
            return PutResult(
                PutStatus.MESSAGE_ILLEGAL,
                error=f"{len(sizes)} message(s) of {size} bytes do not fit one commit-log "
                f"segment of {commit_log.segment_size} bytes",
            )
        actual = commit_log.reserve(size)
        offsets = list(accumulate(sizes[:-1], initial=actual))
        if actual != start:  # rolled to a new segment: move the offsets written in
            buf = bytearray(data)
            for phys in offsets:
                _PHYS.pack_into(buf, phys - actual + POS_PHYSICALOFFSET, phys)
            data = bytes(buf)
        commit_log.write(actual, data)
        end = actual + size
        if cq is None:
            cq = self._queues.get_or_create(topic, queue_id)

        # Dispatch: queue entries, index entries, what the caller is told.
        codes = admitted.tags_codes
        if consumable is None:
            entries = b"".join(map(ENTRY.pack, offsets, sizes, codes))
        else:
            entries = b"".join(
                ENTRY.pack(phys, rsize, code)
                for phys, rsize, code, plain in zip(offsets, sizes, codes, consumable, strict=True)
                if plain
            )
        if entries:
            cq.append(first_queue_offset, entries)
            self._queues.dirty.add(cq)
        self._unindexed.append((topic, admitted.messages, offsets, now, end))
        appended = Appended(offsets, queue_offsets, sizes, now, self._msg_id_prefix)
        durable = self._flusher.request(end) if self._sync else None
        return PutResult(PutStatus.PUT_OK, appended, durable=durable)

    def _notify(
        self,
        listeners: list[ArrivalListener],
        topic: str,
        queue_id: int,
        new_max: int,
        properties_of: Callable[[int], Mapping[str, str]],
        admitted: Admitted,
    ) -> None:
        seen: set[int] = set()
        consumable = admitted.consumable
        for i, code in enumerate(admitted.tags_codes):
            if code in seen or (consumable is not None and not consumable[i]):
                continue
            seen.add(code)
            properties = properties_of(i)
            for listener in listeners:
                try:
                    listener(topic, queue_id, new_max, code, properties)
                except Exception:
                    log.exception("arrival listener %r failed", listener)

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

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self._queues.max_offset(topic, queue_id)

    def min_offset(self, topic: str, queue_id: int) -> int:
        return self._queues.min_offset(topic, queue_id)

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
        if self._index_pending:  # entries of returned appends, deferred (`defer_indexing`)
            with self._lock:
                self._index_appended()
        return key_query.query_by_key(self._index, self._log, topic, key, max_num, begin_ms, end_ms)

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
        return self._dispatched

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
