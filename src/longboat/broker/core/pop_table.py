"""The pop model's bookkeeping for one (consumer group, topic, queue): which offsets are
delivered and invisible, which are done, and how often each was delivered.

RocketMQ 5's clients never send offsets: the broker hands out messages ("pops" them), each
invisible to the group for an invisible duration, and forgets one only when it is acked by
its receipt handle.  An un-acked message becomes visible again when its time runs out and is
delivered once more with its attempt counted; past the group's maximum it is dead-lettered.

State of one queue offset o, for one group (as data):

    NEW (o >= scanned) --read--> IN_FLIGHT(attempt 1, until, seq)   matches the filter
    NEW --read-------------------> DONE                             filtered out
    IN_FLIGHT --ack (handle seq matches)--> DONE
    IN_FLIGHT --change invisible (seq matches)--> IN_FLIGHT(same attempt, new until, new seq)
    IN_FLIGHT --until passed, popped again--> IN_FLIGHT(attempt + 1, new until, new seq)
    IN_FLIGHT --until passed, attempt >= max--> (dead-lettered by the caller) DONE
    IN_FLIGHT --broker restart--> IN_FLIGHT(same attempt, until = 0: visible at once)

Invariants: every offset below `committed` is DONE; every offset in [committed, scanned) is
either in `inflight` or in `done`; nothing at or above `scanned` is in either.  `committed`
moves up over DONE offsets as soon as they are contiguous, so `done` only holds out-of-order
acks.  A receipt handle names (queue, offset, seq): a handle whose seq is not the offset's
current one is stale (acked already, redelivered since, or re-armed), which is what makes an
ack of a redelivered message's old handle fail instead of acking the new delivery.

FIFO groups (ordered consumption): a queue with anything in flight delivers nothing new; only
its own expired messages come back, in offset order, and only once the oldest has expired
(until then the queue is `held`).
Producers hash a message group to one queue, so a group's next message waits for the
previous one's ack.

Every transition is reported to `journal(record)` (see `pop_journal`), so the table can be
rebuilt after a restart: an un-acked message comes back, an acked one never does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Record = tuple[Any, ...]
Journal = Callable[[Record], None]


@dataclass(slots=True)
class InFlight:
    attempt: int  # deliveries so far (1 = the first)
    until: float  # wall-clock seconds when it becomes visible again
    seq: int  # the current receipt handle's generation


@dataclass(slots=True)
class QueuePop:
    """One (group, topic, queue)'s pop state; see the module docstring for the invariants."""

    committed: int
    scanned: int
    done: set[int] = field(default_factory=set)
    inflight: dict[int, InFlight] = field(default_factory=dict)

    def advance(self) -> None:
        """Move `committed` over contiguous DONE offsets."""
        c = self.committed
        done = self.done
        while c < self.scanned and c in done:
            done.discard(c)
            c += 1
        self.committed = c

    def expired(self, now: float) -> list[int]:
        """In-flight offsets whose invisible time is over, oldest first."""
        return sorted(o for o, f in self.inflight.items() if f.until <= now)

    def held(self, now: float) -> bool:
        """FIFO: whether the queue hands out nothing now, its oldest in-flight message still
        invisible (an ack or that message's time running out releases it)."""
        return bool(self.inflight) and self.inflight[min(self.inflight)].until > now


class PopTable:
    """Every (group, topic, queue)'s pop state, with the transitions of the module docstring."""

    def __init__(self, journal: Journal) -> None:
        self._queues: dict[tuple[str, str, int], QueuePop] = {}
        self._journal = journal
        self._seq = 0

    def start_seq_at(self, seq: int) -> None:
        """Handles issued from now on have a larger seq than any before a restart."""
        self._seq = max(self._seq, seq)

    def next_seq(self) -> int:
        """A fresh handle generation: one per pop call (every message it delivers shares it,
        so a remoting client acks them together by one checkpoint) and one per re-arm."""
        self._seq += 1
        return self._seq

    # ------------------------------------------------------------------ lookup

    def queue(self, group: str, topic: str, queue_id: int) -> QueuePop | None:
        return self._queues.get((group, topic, queue_id))

    def open_queue(self, group: str, topic: str, queue_id: int, start: int) -> QueuePop:
        """The queue's state, created at `start` (the group's first offset) when new."""
        key = (group, topic, queue_id)
        q = self._queues.get(key)
        if q is None:
            q = self._queues[key] = QueuePop(committed=start, scanned=start)
            self._journal(("open", group, topic, queue_id, start))
        return q

    def items(self) -> list[tuple[tuple[str, str, int], QueuePop]]:
        return list(self._queues.items())

    # ------------------------------------------------------------------ transitions

    def deliver_new(
        self,
        key: tuple[str, str, int],
        q: QueuePop,
        taken: list[int],
        scanned_to: int,
        until: float,
        seq: int,
    ) -> list[InFlight]:
        """A read covered [q.scanned, scanned_to): `taken` offsets are delivered (attempt 1),
        every other one is DONE (filtered out)."""
        start = q.scanned
        taken_set = set(taken)
        out = []
        for o in range(start, scanned_to):
            if o in taken_set:
                f = q.inflight[o] = InFlight(1, until, seq)
                out.append(f)
            else:
                q.done.add(o)
        q.scanned = max(q.scanned, scanned_to)
        q.advance()
        self._journal(("read", *key, start, scanned_to, taken))
        return out

    def redeliver(
        self, key: tuple[str, str, int], q: QueuePop, offset: int, until: float, seq: int
    ) -> InFlight:
        """An expired in-flight offset delivered again, its attempt counted."""
        f = q.inflight[offset]
        f.attempt += 1
        f.until = until
        f.seq = seq
        self._journal(("pop", *key, offset, f.attempt))
        return f

    def finish(self, key: tuple[str, str, int], q: QueuePop, offset: int) -> None:
        """Acked or dead-lettered: DONE."""
        if q.inflight.pop(offset, None) is None:
            return
        q.done.add(offset)
        q.advance()
        self._journal(("done", *key, offset))

    def rearm(self, q: QueuePop, offset: int, until: float) -> InFlight:
        """ChangeInvisibleDuration: same attempt, new deadline, new handle."""
        f = q.inflight[offset]
        f.until = until
        f.seq = self.next_seq()
        return f

    def skip_to(self, key: tuple[str, str, int], q: QueuePop, offset: int) -> None:
        """The store no longer has offsets below `offset` (retention): forget them."""
        if offset <= q.committed:
            return
        q.inflight = {o: f for o, f in q.inflight.items() if o >= offset}
        q.done = {o for o in q.done if o >= offset}
        q.committed = offset
        q.scanned = max(q.scanned, offset)
        q.advance()
        self._journal(("skip", *key, offset))

    # ------------------------------------------------------------------ persistence

    def snapshot(self) -> list[list[Any]]:
        """Everything needed to rebuild the table (in-flight deadlines are not kept: after a
        restart every un-acked message is visible at once)."""
        return [
            [
                *key,
                q.committed,
                q.scanned,
                sorted(q.done),
                {str(o): f.attempt for o, f in sorted(q.inflight.items())},
            ]
            for key, q in self._queues.items()
        ]

    def restore(self, snapshot: list[list[Any]], records: list[Record]) -> None:
        """Rebuild from `snapshot()` and the journal records written after it."""
        self._queues.clear()
        for group, topic, queue_id, committed, scanned, done, attempts in snapshot:
            q = QueuePop(committed=committed, scanned=scanned, done=set(done))
            for o, attempt in attempts.items():
                q.inflight[int(o)] = InFlight(attempt, 0.0, 0)
            self._queues[(group, topic, queue_id)] = q
        for record in records:
            self._replay(record)

    def _replay(self, record: Record) -> None:
        kind = record[0]
        key = (record[1], record[2], record[3])
        if kind == "open":
            self._queues.setdefault(key, QueuePop(committed=record[4], scanned=record[4]))
            return
        q = self._queues.get(key)
        if q is None:
            return
        if kind == "read":
            start, end, taken = record[4], record[5], set(record[6])
            if start < q.scanned:  # already in the snapshot
                return
            for o in range(start, end):
                if o in taken:
                    q.inflight[o] = InFlight(1, 0.0, 0)
                elif o >= q.committed:
                    q.done.add(o)
            q.scanned = max(q.scanned, end)
        elif kind == "pop":
            f = q.inflight.get(record[4])
            if f is not None:
                f.attempt = record[5]
        elif kind == "done":
            if q.inflight.pop(record[4], None) is not None:
                q.done.add(record[4])
        elif kind == "skip":
            offset = record[4]
            q.inflight = {o: f for o, f in q.inflight.items() if o >= offset}
            q.done = {o for o in q.done if o >= offset}
            q.committed = max(q.committed, offset)
            q.scanned = max(q.scanned, offset)
        q.advance()
