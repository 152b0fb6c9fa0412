"""The process queue: what a push consumer holds of one message queue between pull and commit.

A sans-IO state machine (no asyncio, no clock: times are passed in).  The pull loop puts
pulled messages in; consume services take them out; the offset store reads `committed_offset`.

Invariants:

* `_cache` holds every pulled message not yet consumed, keyed by queue offset; a message being
  consumed stays in `_cache` (concurrent) or moves to `_taken` (orderly) until its outcome is
  known, so `committed_offset` never passes a message whose listener has not returned.
* `committed_offset` is the lowest offset not yet consumed: the smallest key of `_cache` and
  `_taken`, or one past the highest offset ever pulled when both are empty (the next offset
  the queue will deliver).  Committing it is always safe: everything below it was consumed.
* Flow control counts the cache (messages and body bytes, in-flight included) and measures the
  span from `committed_offset` to the highest pulled offset, not between the cache's own first
  and last keys: one hung message with fast successors (consumed and removed) leaves a
  one-entry cache whose own span is 0, yet the committed offset stays stuck behind it
  (RocketMQ #1404).  So a stuck message stops the pulls instead of letting the backlog of
  re-deliveries after a restart grow without bound.
* Once `dropped`, a queue accepts nothing: puts are ignored and no new work is handed out;
  the rebalance that dropped it commits `committed_offset` and forgets it.
* Orderly consumption: `take(n)` hands out the lowest offsets in order and only when nothing
  is taken already (one batch per queue at a time); `commit()` confirms the taken batch,
  `give_back()` returns (part of) it to the cache to be taken again (suspend and retry).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import Enum

from longboat.protocol.message import MessageExt

MiB = 1024 * 1024
# Offsets `committed_offset` steps over before asking the dicts for their first key.
_SCAN_LIMIT = 64


class FlowControl(Enum):
    """Why pulling a queue is paused (see `ProcessQueue.flow_control`)."""

    COUNT = "cached message count over pull_threshold_for_queue"
    SIZE = "cached body bytes over pull_threshold_size_for_queue"
    SPAN = "offset span from the committed offset over consume_concurrently_max_span"


@dataclass(frozen=True, slots=True)
class FlowLimits:
    """Per-queue pull thresholds (RocketMQ's defaults)."""

    max_count: int = 1000
    max_bytes: int = 100 * MiB
    # Concurrent consumption only: orderly queues advance in order, so their span is the count.
    max_span: int | None = 2000


class ProcessQueue:
    """Cached messages of one queue ordered by offset, with the bookkeeping around them."""

    def __init__(self, limits: FlowLimits | None = None) -> None:
        self.limits = limits or FlowLimits()
        # Both kept in ascending offset order (pulls arrive in order; see `put`).
        self._cache: dict[int, MessageExt] = {}
        self._taken: dict[int, MessageExt] = {}
        self._bytes = 0
        # One past the highest offset ever put; -1 until the first put.
        self._next_after_pulled = -1
        # No pending message lies below `_low`: committed_offset scans forward from it, so
        # finding the lowest pending offset costs O(1) amortized instead of a min() per call.
        self._low = 0
        self.dropped = False
        # Orderly consumption: the broker lock and when it was last confirmed (caller's clock).
        self.locked = False
        self.last_lock_time = 0.0
        # Highest count/bytes/span ever held: what tests and metrics read to check flow control.
        self.peak_count = 0
        self.peak_bytes = 0
        self.peak_span = 0

    # ------------------------------------------------------------------ sizes

    @property
    def count(self) -> int:
        """Messages held, in-flight ones included."""
        return len(self._cache) + len(self._taken)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def committed_offset(self) -> int | None:
        """The lowest offset not yet consumed; None before anything was pulled."""
        if self._next_after_pulled < 0:
            return None
        if not self._cache and not self._taken:
            self._low = self._next_after_pulled
            return self._low
        low = self._low
        for _ in range(_SCAN_LIMIT):
            if low in self._cache or low in self._taken:
                self._low = low
                return low
            low += 1
        # A long run of consumed or filtered offsets: ask the ordered dicts directly.
        self._low = min(next(iter(d)) for d in (self._cache, self._taken) if d)
        return self._low

    @property
    def span(self) -> int:
        """Offsets outstanding: from the committed offset to one past the highest pulled."""
        committed = self.committed_offset
        return 0 if committed is None else self._next_after_pulled - committed

    def flow_control(self) -> FlowControl | None:
        """The reason the next pull should wait, or None when it may go."""
        if self.count >= self.limits.max_count:
            return FlowControl.COUNT
        if self._bytes >= self.limits.max_bytes:
            return FlowControl.SIZE
        if self.limits.max_span is not None and self.span >= self.limits.max_span:
            return FlowControl.SPAN
        return None

    def pull_size(self, batch: int) -> int:
        """How many messages the next pull may ask for: at most `batch`, and never so many
        that the count limit would be passed.  The span limit holds too unless the broker's tag
        filter skips offsets, and the byte limit can be passed by one pull's worth: a broker
        transfer is capped at 256 KiB, but always carries at least one message)."""
        room = min(batch, self.limits.max_count - self.count)
        if self.limits.max_span is not None:
            room = min(room, self.limits.max_span - self.span)
        return max(room, 0)

    # ------------------------------------------------------------------ pull side

    def start_at(self, offset: int) -> None:
        """Where pulling starts: the committed offset until the first message arrives."""
        if self._next_after_pulled < 0:
            self._next_after_pulled = self._low = offset

    def put(self, msgs: list[MessageExt]) -> list[MessageExt]:
        """Cache pulled messages; returns those newly added (the ones to consume)."""
        if self.dropped:
            return []
        added = []
        in_order = True
        for msg in msgs:
            offset = msg.queue_offset
            if offset in self._cache or offset in self._taken:
                continue
            in_order = in_order and offset >= self._next_after_pulled
            self._cache[offset] = msg
            self._bytes += len(msg.body)
            added.append(msg)
            self._low = min(self._low, offset) if self._next_after_pulled >= 0 else offset
            self._next_after_pulled = max(self._next_after_pulled, offset + 1)
        if not in_order:  # only if the broker answered out of order: restore the invariant
            self._cache = dict(sorted(self._cache.items()))
        self.peak_count = max(self.peak_count, self.count)
        self.peak_bytes = max(self.peak_bytes, self._bytes)
        self.peak_span = max(self.peak_span, self.span)
        return added

    def skip_to(self, offset: int) -> None:
        """The broker moved the queue on (messages filtered out, or offset illegal): nothing
        below `offset` remains to consume once the cache drains."""
        self._next_after_pulled = max(self._next_after_pulled, offset)

    def move_to(self, offset: int) -> bool:
        """The broker says the pull offset is illegal and pulling continues at `offset`: when
        nothing is pending, that is the committed offset too (True); else only skip forward."""
        if self._cache or self._taken:
            self.skip_to(offset)
            return False
        self._next_after_pulled = self._low = offset
        return True

    # ------------------------------------------------------------------ concurrent side

    def remove(self, msgs: list[MessageExt]) -> int | None:
        """Forget consumed messages; returns the new committed offset."""
        for msg in msgs:
            if self._cache.pop(msg.queue_offset, None) is not None:
                self._bytes -= len(msg.body)
        return self.committed_offset

    # ------------------------------------------------------------------ orderly side

    @property
    def has_taken(self) -> bool:
        return bool(self._taken)

    def take(self, n: int) -> list[MessageExt]:
        """The `n` lowest cached messages, moved aside until `commit` or `give_back`;
        [] while a batch is out or the queue is dropped."""
        if self._taken or self.dropped or not self._cache:
            return []
        for offset in list(itertools.islice(self._cache, n)):
            self._taken[offset] = self._cache.pop(offset)
        return list(self._taken.values())

    def commit(self) -> int | None:
        """The taken batch was consumed; returns the new committed offset."""
        for msg in self._taken.values():
            self._bytes -= len(msg.body)
        self._taken.clear()
        return self.committed_offset

    def give_back(self, msgs: list[MessageExt] | None = None) -> int | None:
        """The taken batch failed: put `msgs` (default: all of it) back to be taken again,
        first; the rest of the batch counts as consumed.  Returns the committed offset."""
        back = self._taken if msgs is None else {m.queue_offset: m for m in msgs}
        for offset, msg in self._taken.items():
            if offset not in back:
                self._bytes -= len(msg.body)
        # The batch came from the head of the cache: it goes back in front of it.
        self._cache = dict(sorted(back.items())) | self._cache
        self._taken = {}
        return self.committed_offset

    # ------------------------------------------------------------------ locks (orderly)

    def lock_expired(self, now: float, max_age: float) -> bool:
        return not self.locked or now - self.last_lock_time > max_age

    def mark_locked(self, now: float) -> None:
        self.locked = True
        self.last_lock_time = now

    def __repr__(self) -> str:
        return (
            f"ProcessQueue(count={self.count}, bytes={self._bytes}, "
            f"committed={self.committed_offset}, span={self.span}, dropped={self.dropped})"
        )
