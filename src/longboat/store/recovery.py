"""Bringing queues and index back in line with the commit log at open.

The log is the truth; queues and index are derived from it.  Recovery:

  1. drops every consume-queue entry at or past `scan_from` (nothing past it is trusted);
  2. walks the log from min(scan_from, index_from), verifying each record (magic, size, CRC,
     decodable, its offset field) and stopping at the first bad one;
  3. re-creates queue entries for records at or past `scan_from` and index entries for records
     at or past `index_from` (the index may need more: a damaged index file is rebuilt);
  4. ends the log just past the last good record, zeroing the rest and logging what was cut,
     and drops any queue entry that points past that end.

Afterwards every queue entry points at a whole, verified record; the index may still hold
entries for cut records, which lookups discard by re-reading the record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from longboat.protocol.message import MessageExt
from longboat.protocol.sysflags import MessageSysFlag
from longboat.store.admission import index_hashes
from longboat.store.commit_log import CommitLog
from longboat.store.consume_queue import ENTRY, ConsumeQueue
from longboat.store.index import KeyIndex, topic_seed
from longboat.store.queue_table import QueueTable

log = logging.getLogger(__name__)

_INDEX_BATCH = 8192
_QUEUE_RUN = 4096


@dataclass(slots=True)
class RecoveryReport:
    scanned_from: int
    end: int
    records: int
    problem: str | None


def recover(
    commit_log: CommitLog,
    queues: QueueTable,
    index: KeyIndex,
    *,
    scan_from: int,
    index_from: int,
    tags_code_of: Callable[[MessageExt], int],
) -> RecoveryReport:
    scan_from = max(scan_from, commit_log.min_offset)
    if not commit_log.starts_record(scan_from):
        segment_start = scan_from - scan_from % commit_log.segment_size
        log.warning(
            "recovery: offset %d from the checkpoint is not the start of a record; "
            "re-verifying its segment from %d",
            scan_from,
            segment_start,
        )
        scan_from = segment_start
        index_from = min(index_from, scan_from)
    for cq in queues:
        cq.truncate_to_log(scan_from)
    start = max(min(scan_from, index_from), commit_log.min_offset)
    scan = commit_log.scan(start)
    pending: list[tuple[int, int, int]] = []
    seeds: dict[str, int] = {}
    records = 0
    rebuilds: dict[tuple[str, int], _QueueRebuild] = {}
    for msg in scan:
        offset = msg.commit_log_offset
        if offset >= scan_from and MessageSysFlag.is_consumable_transaction_type(msg.sys_flag):
            key = (msg.topic, msg.queue_id)
            rebuild = rebuilds.get(key)
            if rebuild is None:
                rebuild = rebuilds[key] = _QueueRebuild(queues.get_or_create(*key))
            rebuild.add(msg.queue_offset, ENTRY.pack(offset, msg.store_size, tags_code_of(msg)))
        if offset >= index_from:
            ts = msg.store_timestamp
            seed = seeds.get(msg.topic)
            if seed is None:
                seed = seeds[msg.topic] = topic_seed(msg.topic)
            pending += [(h, offset, ts) for h in index_hashes(seed, msg.properties)]
            if len(pending) >= _INDEX_BATCH:
                index.add(pending, offset + msg.store_size)
                pending = []
        records += 1
    index.add(pending, scan.end)
    for rebuild in rebuilds.values():
        rebuild.flush()
    commit_log.set_end(scan.end, scan.problem)
    for cq in queues:
        cq.truncate_to_log(scan.end)
    if records or scan.problem:
        log.info(
            "commit log: recovered from offset %d to %d (%d records checked)",
            start,
            scan.end,
            records,
        )
    return RecoveryReport(start, scan.end, records, scan.problem)


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
