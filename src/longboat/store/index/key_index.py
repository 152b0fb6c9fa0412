"""The key index: message key (KEYS, space separated) and UNIQ_KEY → commit-log offsets.

An on-disk hash table per file, as RocketMQ's IndexFile; header and entries are written
through a shared map, the slot table through a private one that each sync copies into the
file (`slot_table` says why):

    HEADER 48: MAGIC 4 | SLOTS 4 | MAX ENTRIES 4 | COUNT 4 |
               BEGIN PHYS 8 | END PHYS 8 | BEGIN TIME 8 | END TIME 8
    SLOTS x 4: number (1-based) of the newest entry whose key hashes to the slot, 0 = none
               (little-endian, read through a native int view)
    ENTRIES x 20: KEY HASH 4 | COMMIT-LOG OFFSET 8 | STORE TIME - BEGIN TIME (ms) 4 | PREV 4

The hash is CRC32 of "topic#key" (`keys`; C speed; RocketMQ uses Java's hashCode, but the file is
ours alone).  A file is full after MAX ENTRIES entries, or when a store time no longer fits
the 4-byte delta; the next file begins at the next record.

Invariants (what makes a crash at any instant harmless):
  * a batch writes its entries, then COUNT and END PHYS, then the slots, which reach the
    file later still, at the next sync: an entry a slot points at is always counted; a
    counted entry no slot reaches is merely invisible, and recovery re-indexes from the
    checkpoint anyway (a checkpoint is recorded only after the slots below it are synced);
  * PREV numbers strictly decrease along a chain, so a walk ends even in a damaged file;
  * answers are candidates: the store re-reads each record and keeps it only if its topic
    and keys really match, so collisions and stale entries never reach a caller.
"""

from __future__ import annotations

import functools
import logging
import struct
import sys
from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path

from longboat.store.errors import StoreError
from longboat.store.index.slot_table import SLOT_SIZE, SlotTable, Written
from longboat.store.json_file import fsync_dir
from longboat.store.segments import MappedSegment, segment_name

log = logging.getLogger(__name__)

_MAGIC = 0x4C42_4958  # "LBIX"
_HEADER = struct.Struct(">iiiiqqqq")
_ENTRY_FORMAT = "Iqii"
_ENTRY = struct.Struct(">" + _ENTRY_FORMAT)
_MAX_DELTA_MS = 2**31 - 1


@functools.lru_cache(maxsize=256)
def _entries_struct(count: int) -> struct.Struct:
    """`count` consecutive entries as one struct (batches come in few sizes)."""
    return struct.Struct(">" + _ENTRY_FORMAT * count)


class IndexFile:
    """One hash-table file, named by the commit-log offset of its first record."""

    def __init__(self, path: Path, slots: int, max_entries: int) -> None:
        self.path = path
        self.slots = slots
        self.max_entries = max_entries
        if sys.byteorder != "little":
            raise StoreError("the key index's slot table is little-endian; this host is not")
        self.size = _HEADER.size + slots * SLOT_SIZE + max_entries * _ENTRY.size
        self._entries_base = _HEADER.size + slots * SLOT_SIZE
        fresh = not path.exists()
        self.file = MappedSegment(path, int(path.name), self.size, preallocate=False)
        self.mm = self.file.mm  # header and entries
        self._table = SlotTable(path, _HEADER.size, slots)
        self._slots = self._table.heads
        self.begin_phys = int(path.name)
        self.count = 0
        self.end_phys = self.begin_phys
        self.begin_ts = 0
        self.end_ts = 0
        if fresh:
            self._write_header()

    def _write_header(self) -> None:
        _HEADER.pack_into(
            self.mm,
            0,
            _MAGIC,
            self.slots,
            self.max_entries,
            self.count,
            self.begin_phys,
            self.end_phys,
            self.begin_ts,
            self.end_ts,
        )

    def read_header(self) -> str | None:
        """Load the header; returns why the file is damaged, or None when it is sound."""
        magic, slots, max_entries, count, begin, end, begin_ts, end_ts = _HEADER.unpack_from(
            self.mm, 0
        )
        if magic != _MAGIC:
            return f"bad magic 0x{magic & 0xFFFFFFFF:08X}"
        if (slots, max_entries) != (self.slots, self.max_entries):
            return f"made for {slots} slots / {max_entries} entries, not the configured sizes"
        if not 0 <= count <= max_entries or begin != self.begin_phys or end < 0:
            return f"inconsistent header (count {count}, offsets {begin}..{end})"
        self.count, self.end_phys, self.begin_ts, self.end_ts = count, end, begin_ts, end_ts
        return None

    def room_for(self, n: int, last_ts: int) -> bool:
        if self.count + n > self.max_entries:
            return False
        return self.count == 0 or last_ts - self.begin_ts <= _MAX_DELTA_MS

    def add(
        self, hashes: Sequence[int], offsets: Sequence[int], stamps: Sequence[int], end_phys: int
    ) -> None:
        """Add entries given as columns (key hash, commit-log offset, store time; not empty);
        caller checked `room_for`.

        A batch's entries go into the map in one struct call and its slots' heads are read in
        one `itemgetter` call: per entry the interpreter only computes the slot and writes it
        back afterwards, which keeps the per-message cost of indexing small next to the
        append.  Keys of one batch that share a slot chain to each other in log order."""
        k = len(hashes)
        n = self.count
        if n == 0:
            self.begin_ts = stamps[0]
        begin_ts = self.begin_ts
        slots = self.slots
        slot_table = self._slots
        slot_of = [h % slots for h in hashes]
        if k == 1:
            prevs: Sequence[int] = (slot_table[slot_of[0]],)
        elif len(set(slot_of)) == k:
            prevs = itemgetter(*slot_of)(slot_table)
        else:
            heads: dict[int, int] = {}
            chained = []
            for number, slot in enumerate(slot_of, n + 1):
                prev = heads.get(slot)
                chained.append(slot_table[slot] if prev is None else prev)
                heads[slot] = number
            prevs = chained
        fields: list[int] = [0] * (4 * k)
        fields[0::4] = hashes
        fields[1::4] = offsets
        fields[2::4] = [ts - begin_ts for ts in stamps]
        fields[3::4] = prevs
        _entries_struct(k).pack_into(self.mm, self._entries_base + n * _ENTRY.size, *fields)
        self.count = n + k
        self.end_phys = end_phys
        self.end_ts = max(self.end_ts, max(stamps))
        self._write_header()
        for number, slot in enumerate(slot_of, n + 1):
            slot_table[slot] = number
        self._table.written(slot_of)

    def lookup(self, h: int, begin_ms: int, end_ms: int, limit: int) -> list[int]:
        """Commit-log offsets of entries with hash `h` stored in [begin_ms, end_ms], newest
        first."""
        out: list[int] = []
        if self.count == 0 or self.end_ts < begin_ms or self.begin_ts > end_ms:
            return out
        mm = self.mm
        n = self._slots[h % self.slots]
        base = self._entries_base
        while 0 < n <= self.count and len(out) < limit:
            eh, phys, delta, prev = _ENTRY.unpack_from(mm, base + (n - 1) * _ENTRY.size)
            if eh == h and begin_ms <= self.begin_ts + delta <= end_ms:
                out.append(phys)
            if prev >= n:
                break
            n = prev
        return out

    def take_written(self) -> Written:
        """The slot writes not yet in the file, for `sync` (under the store's lock)."""
        return self._table.take_written()

    def sync(self, written: Written) -> None:
        """Write the slots `written` into the file, then make the file durable."""
        self._table.write_back(written)
        self.file.sync()

    def close(self) -> None:
        self._table.close()
        self.file.close()

    def delete(self) -> None:
        self._table.drop()
        self.file.delete()


class KeyIndex:
    """The index files of a store, oldest first; the last one takes new entries."""

    def __init__(self, directory: Path, slots: int, max_entries: int) -> None:
        self.directory = directory
        self.slots = slots
        self.max_entries = max_entries
        self.files: list[IndexFile] = []
        self._dirty: set[IndexFile] = set()

    def load(self, log_min_offset: int) -> int | None:
        """Map the files, deleting damaged ones (and any after them: their chains may point
        into the damage).  Returns the commit-log offset to re-index from when files were
        deleted or the directory was missing, None when every file was sound.

        A store's first open creates the directory, so a missing one is an index somebody
        deleted: it is rebuilt from the whole log (for a new store, an empty one)."""
        if not self.directory.exists():
            self.directory.mkdir(parents=True)
            return log_min_offset
        names = sorted(p.name for p in self.directory.iterdir() if p.name.isdigit())
        rebuild_from: int | None = None
        for name in names:
            path = self.directory / name
            if rebuild_from is not None:
                path.unlink()
                continue
            f = IndexFile(path, self.slots, self.max_entries)
            problem = f.read_header()
            if problem is not None:
                log.warning("index: %s is damaged (%s); rebuilding it from the log", name, problem)
                f.delete()
                rebuild_from = self.files[-1].end_phys if self.files else log_min_offset
                continue
            self.files.append(f)
        if rebuild_from is not None:
            fsync_dir(self.directory)
        return rebuild_from

    def add(
        self, hashes: Sequence[int], offsets: Sequence[int], stamps: Sequence[int], end_phys: int
    ) -> None:
        """Index a batch of entries given as columns (key hash, commit-log offset, store
        time), stored in log order; `end_phys` is the log offset just past the batch's
        records."""
        if len(hashes) > self.max_entries:
            step = self.max_entries
            for i in range(0, len(hashes), step):
                j = i + step
                part_end = offsets[j] if j < len(offsets) else end_phys
                self.add(hashes[i:j], offsets[i:j], stamps[i:j], part_end)
            return
        current = self.files[-1] if self.files else None
        if not hashes:
            if current is not None and end_phys > current.end_phys:
                current.end_phys = end_phys
            return
        # A file keeps store times as 4-byte deltas from its first: entries more than ~24.8
        # days apart (a sparse log re-indexed in one batch) go to files of their own.
        latest = stamps[0] + _MAX_DELTA_MS
        newest = max(stamps)
        if newest > latest:
            cut = next(i for i, ts in enumerate(stamps) if ts > latest)
            self.add(hashes[:cut], offsets[:cut], stamps[:cut], offsets[cut])
            self.add(hashes[cut:], offsets[cut:], stamps[cut:], end_phys)
            return
        if current is None or not current.room_for(len(hashes), newest):
            # Named by its first record; re-indexing after a crash may revisit offsets an
            # older file already covers, so names only have to increase.
            begin = offsets[0] if current is None else max(offsets[0], current.begin_phys + 1)
            current = IndexFile(self.directory / segment_name(begin), self.slots, self.max_entries)
            fsync_dir(self.directory)
            self.files.append(current)
        current.add(hashes, offsets, stamps, end_phys)
        self._dirty.add(current)

    def lookup(self, h: int, begin_ms: int, end_ms: int, limit: int) -> list[int]:
        out: list[int] = []
        for f in reversed(self.files):
            if len(out) >= limit:
                break
            out += f.lookup(h, begin_ms, end_ms, limit - len(out))
        return out

    def drop_below(self, log_min_offset: int) -> int:
        """Delete files whose every entry points below the log's first offset."""
        dropped = 0
        while len(self.files) > 1 and self.files[0].end_phys <= log_min_offset:
            f = self.files.pop(0)
            self._dirty.discard(f)
            f.delete()
            dropped += 1
        return dropped

    def take_dirty(self) -> list[tuple[IndexFile, Written]]:
        """The files added to since the last call, each with its slot writes not yet in the
        file, for `sync`.  Called under the store's lock: every slot written before the
        checkpoint reads how far dispatch reached is then among them."""
        dirty, self._dirty = self._dirty, set()
        return [(f, f.take_written()) for f in dirty]

    def sync(self, dirty: list[tuple[IndexFile, Written]]) -> None:
        for f, written in dirty:
            f.sync(written)

    def close(self) -> None:
        for f in self.files:
            f.close()
        self.files = []

    @property
    def disk_bytes(self) -> int:
        return sum(f.path.stat().st_blocks * 512 for f in self.files if f.path.exists())
