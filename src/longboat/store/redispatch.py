"""Queue and index entries re-created from records already in the commit log.

Two paths write records without the append path's in-line dispatch: recovery (the records a
crash left undispatched) and replication (a master's bytes copied into a replica's log).  Both
walk verified records and hand each to a `Redispatch`, which writes the queue entries in runs,
at the queue offsets the records carry, and the index entries in batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from longboat.protocol.message import MessageExt
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import LMQ_QUEUE_ID
from longboat.store import lmq
from longboat.store.consume_queue import ENTRY, ConsumeQueue
from longboat.store.index.key_index import KeyIndex
from longboat.store.index.keys import index_hashes, topic_seed
from longboat.store.queue_table import QueueTable

log = logging.getLogger(__name__)

_INDEX_BATCH = 8192
_QUEUE_RUN = 4096


@dataclass(eq=False, slots=True)
class Redispatch:
    """Entries for records at or past `queue_from` (queues) and `index_from` (index)."""

    queues: QueueTable
    index: KeyIndex
    tags_code_of: Callable[[MessageExt], int]
    _: KW_ONLY
    queue_from: int = 0
    index_from: int = 0
    # Index entries not yet written, as the index takes them: hashes, offsets, times.
    _hashes: list[int] = field(default_factory=list, init=False)
    _offsets: list[int] = field(default_factory=list, init=False)
    _stamps: list[int] = field(default_factory=list, init=False)
    _seeds: dict[str, int] = field(default_factory=dict, init=False)
    _rebuilds: dict[tuple[str, int], _QueueRebuild] = field(default_factory=dict, init=False)
    records: int = field(default=0, init=False)

    def add(self, msg: MessageExt) -> int | None:
        """Dispatch one record; returns its tags code when it got a queue entry."""
        offset = msg.commit_log_offset
        code = None
        if offset >= self.queue_from and MessageSysFlag.is_consumable_transaction_type(
            msg.sys_flag
        ):
            rebuild = self._rebuild((msg.topic, msg.queue_id))
            code = self.tags_code_of(msg)
            entry = ENTRY.pack(offset, msg.store_size, code)
            rebuild.add(msg.queue_offset, entry)
            for lmq_key, lmq_offset in self._lmq(msg):
                self._rebuild(lmq_key).add(lmq_offset, entry)
        if offset >= self.index_from:
            seed = self._seeds.get(msg.topic)
            if seed is None:
                seed = self._seeds[msg.topic] = topic_seed(msg.topic)
            hashes = index_hashes(seed, msg.properties)
            self._hashes += hashes
            self._offsets += [offset] * len(hashes)
            self._stamps += [msg.store_timestamp] * len(hashes)
            if len(self._hashes) >= _INDEX_BATCH:
                self._write_index(offset + msg.store_size)
        self.records += 1
        return code

    def _rebuild(self, key: tuple[str, int]) -> _QueueRebuild:
        rebuild = self._rebuilds.get(key)
        if rebuild is None:
            rebuild = self._rebuilds[key] = _QueueRebuild(self.queues.get_or_create(*key))
        return rebuild

    @staticmethod
    def _lmq(msg: MessageExt) -> list[tuple[tuple[str, int], int]]:
        """The LMQ queues (and offsets) the record was dispatched to besides its own."""
        if lmq.INNER_MULTI_QUEUE_OFFSET not in msg.properties:
            return []
        targets = lmq.lmq_targets(msg.topic, msg.properties)
        return [((name, LMQ_QUEUE_ID), offset) for name, offset in targets]

    def _write_index(self, end: int) -> None:
        self.index.add(self._hashes, self._offsets, self._stamps, end)
        self._hashes, self._offsets, self._stamps = [], [], []

    def finish(self, end: int) -> list[ConsumeQueue]:
        """Write what is buffered; `end` is the log offset the index now covers.  Returns the
        queues that got entries."""
        self._write_index(end)
        for rebuild in self._rebuilds.values():
            rebuild.flush()
        touched = [r.cq for r in self._rebuilds.values()]
        self._rebuilds = {}
        return touched


class _QueueRebuild:
    """Entries re-created for one queue, written in runs rather than one at a time."""

    __slots__ = ("cq", "entries", "first")

    def __init__(self, cq: ConsumeQueue) -> None:
        self.cq = cq
        self.first = cq.max_offset
        self.entries: list[bytes] = []

    def add(self, queue_offset: int, entry: bytes) -> None:
        expected = self.first + len(self.entries)
        if queue_offset < expected:
            return  # the queue already has it
        if queue_offset > expected:
            self.flush()
            log.error(
                "consume queue %s/%d: entries %d..%d were lost with no record to rebuild them "
                "from; readers will skip them",
                self.cq.topic,
                self.cq.queue_id,
                expected,
                queue_offset - 1,
            )
            self.first = queue_offset
        self.entries.append(entry)
        if len(self.entries) >= _QUEUE_RUN:
            self.flush()

    def flush(self) -> None:
        if self.entries:
            self.cq.append(self.first, b"".join(self.entries))
            self.first += len(self.entries)
            self.entries = []
