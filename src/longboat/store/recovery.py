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
from longboat.store.index import KeyIndex

log = logging.getLogger("longboat.store")

_INDEX_BATCH = 8192


@dataclass(slots=True)
class RecoveryReport:
    scanned_from: int
    end: int
    records: int
    problem: str | None


def recover(
    commit_log: CommitLog,
    queues: dict[tuple[str, int], ConsumeQueue],
    queue_for: Callable[[str, int], ConsumeQueue],
    index: KeyIndex,
    *,
    scan_from: int,
    index_from: int,
    tags_code_of: Callable[[MessageExt], int],
) -> RecoveryReport:
    scan_from = max(scan_from, commit_log.min_offset)
    for cq in queues.values():
        cq.truncate_to_log(scan_from)
    start = max(min(scan_from, index_from), commit_log.min_offset)
    scan = commit_log.scan(start)
    pending: list[tuple[int, int, int]] = []
    records = 0
    for msg in scan:
        offset = msg.commit_log_offset
        if offset >= scan_from and MessageSysFlag.is_consumable_transaction_type(msg.sys_flag):
            cq = queue_for(msg.topic, msg.queue_id)
            if msg.queue_offset >= cq.max_offset:
                if msg.queue_offset > cq.max_offset:
                    log.error(
                        "consume queue %s/%d: entries %d..%d were lost with no record to "
                        "rebuild them from; readers will skip them",
                        msg.topic,
                        msg.queue_id,
                        cq.max_offset,
                        msg.queue_offset - 1,
                    )
                cq.append(msg.queue_offset, ENTRY.pack(offset, msg.store_size, tags_code_of(msg)))
        if offset >= index_from:
            ts = msg.store_timestamp
            pending += [(h, offset, ts) for h in index_hashes(msg.topic, msg.properties)]
            if len(pending) >= _INDEX_BATCH:
                index.add(pending, offset + msg.store_size)
                pending = []
        records += 1
    index.add(pending, scan.end)
    commit_log.set_end(scan.end, scan.problem)
    for cq in queues.values():
        cq.truncate_to_log(scan.end)
    if records or scan.problem:
        log.info(
            "commit log: recovered from offset %d to %d (%d records checked)",
            start,
            scan.end,
            records,
        )
    return RecoveryReport(start, scan.end, records, scan.problem)
