"""The append path: records copied into the commit log and dispatched in-line.

Dispatch is in-line: by the time `put_messages` returns, the queue entry exists and the
arrival listeners have been told (`arrivals`), on the appending thread, microseconds after
the copy.  The key-index entries follow the listeners (`index.writer` says why and when).
A master's bytes copied into a replica (`append_replicated`) are dispatched the same way,
from the records they complete.

Every step that must be atomic runs under the store's lock: assigning queue and commit-log
offsets, copying records in, writing their queue entries.  Store times never go back along
the log (`last_store_ms`), whatever the clock does.
"""

from __future__ import annotations

import errno
import logging
import struct
import threading
from collections.abc import Callable, Mapping
from itertools import accumulate

from longboat.protocol.ids import host_bytes, offset_msg_id_prefix
from longboat.protocol.message import POS_PHYSICALOFFSET, MessageExt, encode_record_batch
from longboat.protocol.properties import RawProperties
from longboat.protocol.topic_names import LMQ_QUEUE_ID, topic_allows_lmq
from longboat.store import lmq
from longboat.store.admission import Admission, Admitted
from longboat.store.arrivals import Arrivals
from longboat.store.commit_log import CommitLog
from longboat.store.config import StoreConfig
from longboat.store.consume_queue import ENTRY, pack_entries
from longboat.store.errors import StoreUsageError
from longboat.store.flush import FlushService
from longboat.store.index.writer import IndexWriter
from longboat.store.lifecycle import Lifecycle, StoreState
from longboat.store.maintenance import StoreMaintenance
from longboat.store.message_inner import EncodedBatch, MessageInner
from longboat.store.queue_table import QueueTable
from longboat.store.redispatch import Redispatch
from longboat.store.results import Appended, PutResult, PutStatus

log = logging.getLogger(__name__)

_PHYS = struct.Struct(">q")


class Appender:
    """Appends to one store: a producer's batches (`put_messages`, `put_encoded_batch`) and a
    master's bytes (`append_replicated`)."""

    def __init__(
        self,
        config: StoreConfig,
        *,
        lock: threading.Lock,
        lifecycle: Lifecycle,
        commit_log: CommitLog,
        queues: QueueTable,
        indexer: IndexWriter,
        arrivals: Arrivals,
        flusher: FlushService,
        admission: Admission,
        maintenance: StoreMaintenance,
        clock: Callable[[], float],
        tags_code_of: Callable[[MessageExt], int],
    ) -> None:
        """`maintenance` refuses appends while the disk is full; `tags_code_of` gives a
        replicated record's tags code (as recovery does)."""
        self._lock = lock
        self._life = lifecycle
        self._log = commit_log
        self._queues = queues
        self._indexer = indexer
        self._arrivals = arrivals
        self._flusher = flusher
        self._sync = config.sync_flush
        self._multi_dispatch = config.enable_multi_dispatch
        self._admission = admission
        self._maintenance = maintenance
        self._clock = clock
        self._tags_code_of = tags_code_of
        self._store_host = host_bytes(config.store_host)
        self._store_port = config.store_port
        self._msg_id_prefix = offset_msg_id_prefix(self._store_host, config.store_port)
        # The newest store time along the log (set at open from the queues).
        self.last_store_ms = 0

    # ------------------------------------------------------------------ a producer's batch

    def put_messages(self, msgs: list[MessageInner]) -> PutResult:
        """See `MessageStore.put_messages`."""
        admitted = self._admission.admit(msgs)
        if type(admitted) is PutResult:
            return admitted
        assert type(admitted) is Admitted
        return self._put(admitted, lambda i: msgs[i].properties)

    def put_encoded_batch(self, batch: EncodedBatch) -> PutResult:
        """See `MessageStore.put_encoded_batch`."""
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
                state = self._life.state
                if state is not StoreState.OPEN:
                    return PutResult(
                        PutStatus.SERVICE_NOT_AVAILABLE, error=f"the store is {state.value}"
                    )
                result, dispatched = self._append(admitted)
                if result.status is not PutStatus.PUT_OK:
                    return result
                new_max = self._queues.max_offset(topic, queue_id)
        except OSError as exc:
            log.error("commit log: append failed: %s", exc)
            if exc.errno == errno.ENOSPC:  # filled by another writer between two checks
                self._maintenance.check_disk()
                return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, error=f"append failed: {exc}")
            return PutResult(PutStatus.UNKNOWN_ERROR, error=f"append failed: {exc}")
        arrivals = self._arrivals
        try:
            if arrivals.listeners:
                arrivals.tell_batch(
                    topic,
                    queue_id,
                    new_max,
                    admitted.tags_codes,
                    admitted.consumable,
                    properties_of,
                )
                if dispatched is not None:  # each LMQ the message went to has it too
                    lmq.tell_arrivals(arrivals, dispatched, admitted.tags_codes, properties_of)
        finally:
            self._indexer.after_append()
        if arrivals.observers:
            arrivals.appended(self._log.write_offset)
        return result

    def _append(self, admitted: Admitted) -> tuple[PutResult, lmq.Targets | None]:
        """Encode, copy in, write the queue entries; the index entries are left to the
        index writer.  Also returns where an LMQ message was dispatched (None: nowhere).
        Caller holds the lock."""
        topic, queue_id = admitted.topic, admitted.queue_id
        # A new queue is registered only once its first record is written: a refused append
        # leaves no trace, in memory or on disk.
        cq = self._queues.get(topic, queue_id)
        now = int(self._clock() * 1000)
        if now < self.last_store_ms:
            now = self.last_store_ms  # store times never go back along the log
        self.last_store_ms = now
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
        messages = admitted.messages
        targets = None
        if self._multi_dispatch and len(messages) == 1 and topic_allows_lmq(topic):
            messages, targets = lmq.plan(self._queues, messages)
        host, port = self._store_host, self._store_port
        data, sizes = encode_record_batch(
            topic=admitted.topic_bytes,
            queue_id=queue_id,
            commit_log_offset=start,
            store_timestamp=now,
            store_host=host,
            store_port=port,
            messages=messages,
            senders=admitted.senders,
            queue_offsets=queue_offsets,
        )
        size = len(data)
        if size > commit_log.max_record_size:
            return PutResult(
                PutStatus.MESSAGE_ILLEGAL,
                error=f"{len(sizes)} message(s) of {size} bytes do not fit one commit-log "
                f"segment of {commit_log.segment_size} bytes",
            ), None
        if commit_log.allocates(size):
            refusal = self._maintenance.check_disk()
            if refusal is not None:
                return PutResult(PutStatus.SERVICE_NOT_AVAILABLE, error=refusal), None
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
            entries = pack_entries(offsets, sizes, codes)
        else:
            entries = b"".join(
                ENTRY.pack(phys, rsize, code)
                for phys, rsize, code, plain in zip(offsets, sizes, codes, consumable, strict=True)
                if plain
            )
        if entries:
            cq.append(first_queue_offset, entries)
            self._queues.dirty.add(cq)
        if targets is not None:
            lmq.write(self._queues, targets, offsets, sizes, codes)
        self._indexer.appended(topic, messages, offsets, now, end)
        appended = Appended(offsets, queue_offsets, sizes, now, self._msg_id_prefix)
        durable = self._flusher.request(end) if self._sync else None
        return PutResult(PutStatus.PUT_OK, appended, durable=durable), targets

    # ------------------------------------------------------------------ a master's bytes

    def append_replicated(self, offset: int, data: bytes) -> int:
        """See `MessageStore.append_replicated`."""
        notify: dict[tuple[str, int, int], Mapping[str, str]] = {}
        indexer = self._indexer
        with self._lock:
            if self._life.state is not StoreState.OPEN:
                raise StoreUsageError(
                    f"replicated append on a store that is {self._life.state.value}"
                )
            log_ = self._log
            try:
                log_.write_replicated(offset, data)
            except ValueError as exc:
                raise StoreUsageError(str(exc)) from None
            indexer.write()
            if indexer.dispatched < log_.min_offset:
                indexer.dispatched = log_.min_offset  # a new replica's first segment
            scan = log_.scan(indexer.dispatched, limit=log_.write_offset)
            redispatch = Redispatch(self._queues, indexer.index, self._tags_code_of)
            for msg in scan:
                code = redispatch.add(msg)
                if code is not None:
                    notify.setdefault((msg.topic, msg.queue_id, code), msg.properties)
                    for name, _ in lmq.lmq_targets(msg.topic, msg.properties):
                        notify.setdefault((name, LMQ_QUEUE_ID, code), msg.properties)
                self.last_store_ms = max(self.last_store_ms, msg.store_timestamp)
            touched = redispatch.finish(scan.end)
            if scan.problem is not None:
                log_.set_end(scan.end, scan.problem)  # keep what was whole; refuse the rest
                raise StoreUsageError(f"replicated bytes do not hold valid records: {scan.problem}")
            for cq in touched:
                self._queues.dirty.add(cq)
            indexer.dispatched = max(indexer.dispatched, scan.end)
            end = log_.write_offset
        if self._sync:
            self._flusher.request(end)
        for (topic, queue_id, code), properties in notify.items():
            new_max = self._queues.max_offset(topic, queue_id)
            self._arrivals.tell(topic, queue_id, new_max, code, properties)
        return end
