"""Bringing queues and index back in line with the commit log at open.

The log is the truth; queues and index are derived from it.  Recovery:

  1. drops every consume-queue entry at or past `scan_from` (nothing past it is trusted);
  2. walks the log from min(scan_from, index_from), verifying each record (magic, size, CRC,
     decodable, its offset field) and stopping at the first bad one;
  3. re-creates queue entries for records at or past `scan_from` and index entries for records
     at or past `index_from` (the index may need more: a damaged index file is rebuilt);
  4. ends the log just past the last good record, zeroing the rest and logging what was cut,
     and drops any queue entry that points past that end.

Queues are mapped lazily (queue_table): steps 1 and 4 apply to the queues mapped (those the
scan re-dispatched into) and, through `trust_below`, to every other one when it is mapped.

Afterwards every queue entry points at a whole, verified record; the index may still hold
entries for cut records, which lookups discard by re-reading the record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from longboat.protocol.message import MessageExt
from longboat.store.commit_log import CommitLog
from longboat.store.index.key_index import KeyIndex
from longboat.store.queue_table import QueueTable
from longboat.store.redispatch import Redispatch

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RecoveryReport:
    scanned_from: int
    end: int
    records: int
    problem: str | None
    newest_store_ms: int = 0  # the store time of the last record scanned (0: none)


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
    queues.trust_below(scan_from)
    start = max(min(scan_from, index_from), commit_log.min_offset)
    scan = commit_log.scan(start)
    redispatch = Redispatch(
        queues, index, tags_code_of, queue_from=scan_from, index_from=index_from
    )
    newest_store_ms = 0
    for msg in scan:
        redispatch.add(msg)
        newest_store_ms = msg.store_timestamp
    redispatch.finish(scan.end)
    records = redispatch.records
    commit_log.set_end(scan.end, scan.problem)
    queues.trust_below(scan.end)
    if records or scan.problem:
        log.info(
            "commit log: recovered from offset %d to %d (%d records checked)",
            start,
            scan.end,
            records,
        )
    return RecoveryReport(start, scan.end, records, scan.problem, newest_store_ms)
