"""Reading a consume queue: RocketMQ's DefaultMessageStore.getMessage decision table.

| queue vs requested offset o        | status                | next_begin_offset            |
|------------------------------------|-----------------------|------------------------------|
| queue never had a message          | NO_MESSAGE_IN_QUEUE   | 0                            |
| o < min                            | OFFSET_TOO_SMALL      | min                          |
| o == max                           | OFFSET_OVERFLOW_ONE   | o                            |
| o > max                            | OFFSET_OVERFLOW_BADLY | 0 if min == 0 else max (*)   |
| ≥ 1 entry matched                  | FOUND                 | o + entries scanned          |
| entries scanned, none matched      | NO_MATCHED_MESSAGE    | o + entries scanned          |
| entries point at deleted records   | MESSAGE_WAS_REMOVING  | o + entries scanned          |

(*) as RocketMQ: a consumer ahead of a queue that still starts at 0 is most likely looking
at a store that was wiped and refilled, so it is sent back to the start rather than past
messages it never saw.

Entries skipped by the tag filter (on the entry's tags code) or the record filter (on the
stored record: SQL92 over its properties) count as scanned, so the consumer moves past them.
A reply stops at `max_msgs`, at `max_count` messages or `max_bytes` bytes (the first message
always goes, however large), after scanning max(800, min(max_msgs, max_count)) entries, or at the
end of the consume-queue file holding `offset`.  RocketMQ scans max(16000 B, maxMsgNums x
20 B) of one file: with a huge maxMsgNums and a tag nobody sent, that is a whole file (300,000
entries) per pull, re-run by every held pull's wake-up.  Here one pull scans at most 800
entries (what RocketMQ scans for any maxMsgNums up to 800) plus what it may return, so
the work of a read on the event loop is bounded whatever the request says.

Records adjacent in the log are read as one piece (a stored batch is one run).  A pull with
no filter is answered without a Python step per entry: its entries are unpacked at once, cut
at `max_bytes` and split where one record does not follow the other in the log, and each run
is one read; only holes and records gone under the read take the entry-by-entry loop.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import struct
from collections.abc import Callable

from longboat.store.commit_log import CommitLog
from longboat.store.consume_queue import ENTRY, ConsumeQueue
from longboat.store.results import GetResult, GetStatus

_MIN_SCAN_ENTRIES = 16000 // ENTRY.size


def read_queue(
    cq: ConsumeQueue | None,
    log: CommitLog,
    offset: int,
    max_msgs: int,
    *,
    max_bytes: int,
    max_count: int,
    tag_filter: Callable[[int], bool] | None,
    record_filter: Callable[[bytes], bool] | None = None,
) -> GetResult:
    if cq is None or cq.max_offset == 0:
        return GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
    lo, hi = cq.min_offset, cq.max_offset
    if offset < lo:
        return GetResult(GetStatus.OFFSET_TOO_SMALL, lo, lo, hi)
    if offset == hi:
        return GetResult(GetStatus.OFFSET_OVERFLOW_ONE, offset, lo, hi)
    if offset > hi:
        return GetResult(GetStatus.OFFSET_OVERFLOW_BADLY, lo if lo == 0 else hi, lo, hi)

    want = max(1, min(max_msgs, max_count))
    scan_left = max(_MIN_SCAN_ENTRIES, want)
    per_file = cq.entries_per_file
    end = min(hi, (offset // per_file + 1) * per_file)
    result = GetResult(GetStatus.NO_MATCHED_MESSAGE, offset, lo, hi)
    parts, sizes, queue_offsets = result.parts, result.sizes, result.queue_offsets
    total = 0
    removed = False
    o = offset
    full = False
    phys = -1
    read = log.reader()
    # With no filter, the first read takes only the entries the pull may return: unless one
    # is a hole or its record went under the read, that is the whole read (`_runs`); else the
    # loop goes on from them.
    unfiltered = tag_filter is None and record_filter is None
    raw = cq.read_entries(o, min(want if unfiltered else scan_left, end - o))
    found = _runs(raw, max_bytes) if unfiltered and raw else None
    if found is not None:
        spans, run_sizes, last = found
        pieces: list[bytes] = []
        for start, stop in spans:  # `_take_run` inline, a call per run fewer on every plain pull
            piece = read(start, stop - start)
            if piece is None:
                break
            pieces.append(piece)
        else:
            count = len(run_sizes)
            parts += pieces
            sizes += run_sizes
            queue_offsets += range(o, o + count)
            result.next_begin_offset = o + count
            result.last_physical_offset = last
            result.status = GetStatus.FOUND
            return result
    # Entries accepted but not yet read: the run of records adjacent in the log from
    # run_start to run_end, `run_count` of them, read as one range when the run breaks.
    run_start = run_end = -1
    run_count = 0
    while True:
        if not raw:
            removed = True  # the queue's files went under us (retention)
            break
        for phys, size, tags_code in ENTRY.iter_unpack(raw):
            if sizes and (len(sizes) >= want or total + size > max_bytes):
                full = True
                break
            o += 1
            scan_left -= 1
            if size <= 0 or (tag_filter is not None and not tag_filter(tags_code)):
                continue
            if record_filter is not None:
                record = read(phys, size)
                if record is None:
                    removed = True
                    continue
                if not record_filter(record):
                    continue
                parts.append(record)
            elif phys == run_end:
                run_end += size
                run_count += 1
            else:
                if run_count and not _take_run(read, parts, run_start, run_end):
                    removed = True
                    total -= _drop_last(run_count, sizes, queue_offsets)
                run_start, run_end, run_count = phys, phys + size, 1
            sizes.append(size)
            queue_offsets.append(o - 1)
            total += size
        if full or o >= end or scan_left <= 0:
            break
        raw = cq.read_entries(o, min(scan_left, end - o))
    if run_count and not _take_run(read, parts, run_start, run_end):
        removed = True
        _drop_last(run_count, sizes, queue_offsets)
    result.next_begin_offset = o
    result.last_physical_offset = phys
    if sizes:
        result.status = GetStatus.FOUND
    elif removed:
        result.status = GetStatus.MESSAGE_WAS_REMOVING
    return result


def _runs(raw: bytes, max_bytes: int) -> tuple[list[tuple[int, int]], list[int], int] | None:
    """What a pull with no filter returns from the entries in `raw`, found without a Python
    step per entry: the runs of records back to back in the log, as (start, end) log offsets,
    each returned record's size, and the last one's log offset.  The records are cut where
    `max_bytes` would be passed (the first always goes).  None when an entry is a hole, which
    the entry-by-entry loop skips instead.  Only the sizes are unpacked for every entry; the
    log offsets are, beyond the first and last, only when the records are not one run."""
    count = len(raw) // ENTRY.size
    sizes = list(_fields(count, "size").unpack(raw))
    if min(sizes) <= 0:
        return None
    total = sum(sizes)
    if total > max_bytes:
        totals = list(itertools.accumulate(sizes))
        count = max(1, bisect.bisect_right(totals, max_bytes))
        sizes, total = sizes[:count], totals[count - 1]
    first = _PHYSICAL.unpack_from(raw)[0]
    last = _PHYSICAL.unpack_from(raw, (count - 1) * ENTRY.size)[0]
    if last + sizes[-1] - first == total:  # one run (a queue's entries rise in the log)
        return [(first, last + sizes[-1])], sizes, last
    # A run breaks before each record that does not start where the one before it ends
    # (another queue's record in between, or a segment's end marker).
    physical = _fields(count, "physical").unpack_from(raw)
    ends = list(map(operator.add, physical, sizes))
    breaks = itertools.compress(range(1, count), map(operator.ne, physical[1:], ends))
    runs: list[tuple[int, int]] = []
    start = 0
    for cut in breaks:
        runs.append((physical[start], ends[cut - 1]))
        start = cut
    runs.append((physical[start], ends[-1]))
    return runs, sizes, last


_PHYSICAL = struct.Struct(">q")
# One field of every entry (the others skipped as padding): ENTRY is log offset 8 | size 4 |
# tags code 8.
_FIELD_FORMATS = {"physical": "q12x", "size": "8xi8x"}
assert all(struct.calcsize(">" + f) == ENTRY.size for f in _FIELD_FORMATS.values())


@functools.cache
def _fields(count: int, field: str) -> struct.Struct:
    """One field of `count` consume-queue entries, unpacked at once."""
    return struct.Struct(">" + _FIELD_FORMATS[field] * count)


def _take_run(
    read: Callable[[int, int], bytes | None], parts: list[bytes], start: int, end: int
) -> bool:
    """Read the records from `start` to `end` of the log as one piece; False when they are
    gone (retention deleted their segment under the read)."""
    piece = read(start, end - start)
    if piece is None:
        return False
    parts.append(piece)
    return True


def _drop_last(count: int, sizes: list[int], queue_offsets: list[int]) -> int:
    """Forget the last `count` accepted records (their run could not be read); their bytes."""
    dropped = sum(sizes[-count:])
    del sizes[-count:], queue_offsets[-count:]
    return dropped
