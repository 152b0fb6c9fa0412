"""Writing the key-index entries of appends, in log order, after the append's listeners.

An append writes its records and queue entries under the store's lock and leaves its index
entries here (`appended`).  They are written once the arrival listeners have been told, not
before: a parked pull is woken without waiting for them, whose slots lie on random pages of a
large file (a page fault each while a fresh index file fills).  The append then writes them
before it returns (`after_append`), unless the owner defers them (`defer`): the broker has
them written after the append's answer leaves, off the producer's round trip, together with
those of the appends that follow within a millisecond (one write for many).  Either
way a lookup by key sees every append that has returned, since it first writes any entries
still pending (`catch_up`).

`dispatched` is the commit-log offset below which every record's queue and index entries
are written: what a checkpoint records and recovery re-indexes from.  It never passes an
entry not yet written, whichever thread writes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from longboat.protocol.message import RecordParts
from longboat.store.index.key_index import KeyIndex
from longboat.store.index.keys import encoded_batch_hashes, topic_seed

log = logging.getLogger(__name__)


class IndexWriter:
    """The index entries of appends not written yet, and how far dispatch has reached."""

    def __init__(self, index: KeyIndex, lock: threading.Lock) -> None:
        """`lock` is the store's append lock: entries are written under it."""
        self.index = index
        self._lock = lock
        self.dispatched = 0
        # Appends whose index entries are not written yet, in log order: (topic, messages
        # (body, properties, flag), commit-log offsets, store time, end of the append's
        # records).
        self._unindexed: list[tuple[str, list[RecordParts], list[int], int, int]] = []
        # Set by `defer`: how the appending thread has the entries written later.
        self._later: Callable[[Callable[[], None]], object] | None = None
        self._pending = False

    def defer(self, later: Callable[[Callable[[], None]], object]) -> None:
        """Write each append's entries through `later(write)` instead of before the append
        returns.  The broker passes a millisecond's timer on its loop: a send's answer is
        written in the callback that appended, so the entries follow it out instead of
        delaying it (one batch in flight waits for its answer before sending the next), and
        the appends of that millisecond share one write, whose cost is mostly per write, not
        per entry.  Appends must then all come from the thread `later` runs callbacks on."""
        self._later = later

    def appended(
        self, topic: str, messages: list[RecordParts], offsets: list[int], stored_ms: int, end: int
    ) -> None:
        """Note an append's entries (its messages at commit-log `offsets`, its records ending
        at `end`).  Caller holds the lock."""
        self._unindexed.append((topic, messages, offsets, stored_ms, end))

    def after_append(self) -> None:
        """Have the noted entries written: now (taking the lock), or through `defer`'s
        `later` (once for however many appends come before it runs)."""
        if self._later is None:
            with self._lock:
                self.write()
        elif not self._pending:
            self._pending = True
            self._later(self._write_deferred)

    def catch_up(self) -> None:
        """Write the entries of appends that have returned (before a lookup by key).  The
        flag is read under the lock: a deferred write under way on the appending thread has
        already taken its entries and cleared it, so a lookup from another thread waits for
        that write to finish rather than read the index without them."""
        with self._lock:
            if self._pending:
                self.write()

    def _write_deferred(self) -> None:
        with self._lock:
            self._pending = False
            self.write()

    def write(self) -> None:
        """Write the entries noted so far, in log order, and move `dispatched` past them.
        Caller holds the lock.  Any appending thread may write another's: entries stay in
        log order whoever writes them."""
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
            self.index.add(hashes, owners, stamps, end)
        except OSError as exc:
            # The records are stored and their queue entries written: the appends stand,
            # only lookups by key miss these (as RocketMQ's index does).
            log.error(
                "key index: %d entries below log offset %d not written: %s", len(hashes), end, exc
            )
        self.dispatched = end
