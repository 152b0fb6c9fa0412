"""Pop consumption over the store: what ReceiveMessage, AckMessage, ChangeInvisibleDuration
and ForwardMessageToDeadLetterQueue do to a consumer group's view of a topic.

The bookkeeping and its invariants are `pop_table`'s; this module reads the consume queues for
it, dead-letters messages past the group's maximum attempts, keeps the group's consumer
offsets (the lowest offset not yet done, per queue) up to date so `group describe` and lag
read the same as for a remoting group, and persists the table through `pop_journal`.

An ack's durability follows the broker's flush mode (`acks_durable`, which the adapters await
before answering an ack): under SYNC_FLUSH an ack answered OK is fsynced first, so no crash
brings its message back; under ASYNC_FLUSH a flush thread syncs the journal every
`flushIntervalCommitLog`, so a machine crash brings back at most that interval's acked
messages.  A killed process loses no ack in either mode (see `pop_journal`).

A pop covers every readable queue of the topic (RocketMQ's proxy pops the broker's queues
together, queue id -1), starting one queue further on each call so no queue starves.  A new
group starts at the group's committed offset when it has one, else at the queue's first
offset: everything still stored is delivered.

Receipt handles are `queue:offset:seq` (opaque to clients).  seq values start from the
broker's start time in microseconds, so no handle issued before a restart matches one issued
after it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from longboat.broker.core.append import Appender
from longboat.broker.core.message_filter import MessageFilter
from longboat.broker.core.pop_journal import PopJournal
from longboat.broker.core.pop_table import InFlight, PopTable, QueuePop, Record
from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.feature_host import FeatureHost
from longboat.broker.state.hold import HoldService
from longboat.filter.sql92 import Sql92Filter
from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.protocol.tags import TagExpression
from longboat.protocol.topic_names import DLQ_GROUP_TOPIC_PREFIX
from longboat.protocol.types import PERM_READ
from longboat.store import FlushDiskType, GetStatus, MessageInner, PutStatus
from longboat.store.flush import FlushService


class PopHost(FeatureHost, Protocol):
    """What pop consumption needs of the broker: a feature's host and the append path
    (dead letters are stored as a send is)."""

    @property
    def appender(self) -> Appender: ...


log = logging.getLogger(__name__)

T = TypeVar("T")

# Compact the journal into a snapshot after this many records (and at stop).
COMPACT_AFTER_RECORDS = 10_000


@dataclass(frozen=True, slots=True)
class PopRequest:
    """What a pop asks, whichever protocol carried it: up to `max_msgs` visible messages of
    `topic` for `group` that `expression` (and `sql`) match, made invisible for
    `invisible_ms`.  `queue_id` -1 pops every readable queue, else that one queue (a remoting
    client may pop queue by queue); `fifo` None: as the group is set."""

    group: str
    topic: str
    max_msgs: int
    expression: TagExpression
    invisible_ms: int
    sql: Sql92Filter | None = None
    queue_id: int = -1
    fifo: bool | None = None


@dataclass(slots=True)
class Popped:
    """One message handed to a consumer."""

    message: MessageExt
    handle: str
    attempt: int
    seq: int  # the handle's generation (shared by every message of one pop call)


def make_handle(queue_id: int, offset: int, seq: int) -> str:
    return f"{queue_id}:{offset}:{seq}"


# A remoting client carries the handle's generation back in the 32-bit reviveQid field of its
# checkpoint (extraInfo): the low 31 bits of seq.
REMOTING_SEQ_MASK = 0x7FFF_FFFF


def parse_handle(handle: str) -> tuple[int, int, int]:
    try:
        queue_id, offset, seq = (int(part) for part in handle.split(":"))
    except ValueError:
        raise Refusal(
            Reason.STALE_HANDLE, f"{handle!r} is not a receipt handle this broker issued"
        ) from None
    return queue_id, offset, seq


# A parked NOTIFICATION is woken by any arrival: its answer applies no filter.
EVERY_MESSAGE = MessageFilter()


class PopService:
    def __init__(
        self,
        controller: PopHost,
        hold: HoldService[Any, Any],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`hold` is the broker's hold service: pops of both protocols that found nothing
        park there beside the held pulls, until an arrival, a message becoming visible again
        or their deadline wakes them."""
        self.controller = controller
        self.hold = hold
        self._clock = clock
        config = controller.config
        # Public for the tests of its durability (written and synced record counts).
        self.journal = PopJournal(config.store_path_root_dir / "config")
        self.table = PopTable(self.journal.append)
        self._sync_acks = config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        self.flusher = FlushService(
            self.journal.file.sync,
            config.flush_interval_commit_log / 1000,
            name="longboat-pop-flush",
        )
        self._turn: dict[tuple[str, str], int] = {}

    def now(self) -> float:
        return self._clock()

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        snapshot, records = self.journal.load()
        self.table.restore(snapshot, records)
        self.table.start_seq_at(int(self._clock() * 1_000_000))
        self.journal.open()
        self.compact()
        self.flusher.start()

    def compact(self) -> None:
        self.journal.compact(self.table.snapshot())

    def maybe_compact(self) -> None:
        if self.journal.records_since_compaction >= COMPACT_AFTER_RECORDS:
            self.compact()

    def close(self) -> None:
        self.compact()
        self.flusher.stop()
        self.journal.close()

    async def acks_durable(self) -> None:
        """Under SYNC_FLUSH, return once every journal record written so far (the acks just
        made among them) is fsynced, sharing the fsync with the acks waiting meanwhile; under
        ASYNC_FLUSH at once (the flush thread syncs every interval).  Raises OSError when the
        fsync failed: the ack is then not known to be durable."""
        file = self.journal.file
        if self._sync_acks and file.synced < file.written:
            await asyncio.wrap_future(self.flusher.request(file.written))

    # ------------------------------------------------------------------ popping

    def max_attempts(self, group: str) -> int:
        """Deliveries before a message is dead-lettered: the group's retryMaxTimes + 1, as
        RocketMQ 5 counts them."""
        return self.controller.subscription_groups.get(group).retry_max_times + 1

    def pop(self, request: PopRequest, fifo: bool) -> list[Popped]:
        """What `request` asks for, now invisible; expired ones past the maximum attempts are
        dead-lettered instead.  `fifo`: the request's, or the group's setting."""
        group, topic, queue_id = request.group, request.topic, request.queue_id
        max_msgs = request.max_msgs
        ctl = self.controller
        config = ctl.topics.get(topic)
        if config is None or not config.perm & PERM_READ:
            return []
        nums = max(1, config.read_queue_nums)
        turn = self._turn.get((group, topic), 0)
        self._turn[(group, topic)] = (turn + 1) % nums
        now = self._clock()
        when = (now, now + request.invisible_ms / 1000, self.table.next_seq())
        queues = [(turn + i) % nums for i in range(nums)] if queue_id < 0 else [queue_id]
        out: list[Popped] = []
        for qid in queues:
            left = max_msgs - len(out)
            if left <= 0 or qid >= nums:
                break
            out += self._pop_queue(
                group, topic, qid, left, (request.expression, request.sql), when, fifo
            )
        return out

    async def pop_waiting(self, request: PopRequest, wait_s: float) -> list[Popped]:
        """`pop`, long-polled: parked up to `wait_s` until an arrival, or an in-flight message
        becoming visible again, gives it something."""
        group, topic = request.group, request.topic
        fifo = request.fifo
        if fifo is None:
            fifo = self.controller.subscription_groups.get(group).consume_message_orderly
        order = fifo

        def attempt() -> list[Popped]:
            popped = self.pop(request, order)
            if popped:
                self.maybe_compact()
                self._wake_when_visible(group, topic)
            return popped

        # Woken by the tags its expression accepts; an SQL92 expression is not evaluated on
        # the arrival (a batch reports the properties of its first message per tag only).
        expression = request.expression
        flt = MessageFilter(codes=None if expression.matches_all else expression.codes)
        return await self._until(group, topic, request.queue_id, flt, wait_s, attempt) or []

    async def notify_waiting(
        self, group: str, topic: str, queue_id: int, wait_s: float, fifo: bool = False
    ) -> bool:
        """NOTIFICATION: whether the group has a message to pop (new or visible again, filters
        not applied, as RocketMQ's answer; with `fifo`, none in a queue an orderly pop holds),
        waiting up to `wait_s` for one."""
        return await self._until(
            group,
            topic,
            queue_id,
            EVERY_MESSAGE,
            wait_s,
            lambda: self.has_visible(group, topic, queue_id, fifo),
        )

    def has_visible(self, group: str, topic: str, queue_id: int = -1, fifo: bool = False) -> bool:
        store, now = self.controller.store, self._clock()
        for qid in self._queue_ids(topic, queue_id):
            q = self.table.queue(group, topic, qid)
            if q is None:
                committed = self.controller.offsets.query(group, topic, qid)
                start = committed if committed is not None else store.min_offset(topic, qid)
                if store.max_offset(topic, qid) > start:
                    return True
            elif fifo and q.held(now):
                continue
            elif q.expired(now) or store.max_offset(topic, qid) > q.scanned:
                return True
        return False

    async def _until(
        self,
        group: str,
        topic: str,
        queue_id: int,
        flt: MessageFilter,
        wait_s: float,
        attempt: Callable[[], T],
    ) -> T:
        """`attempt()` until it gives something truthy or `wait_s` ran out, parked in the
        hold service between tries until an arrival on `topic` that `flt` passes, a message
        of the group becoming visible again or the deadline.  Each try starts by noting the
        ends of the queues it reads (`queue_id`, -1: all), so the hold service's re-check
        sees a message stored between the empty try and the parking."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            ends = self._ends(topic, queue_id)
            got = attempt()
            remaining = deadline - loop.time()
            if got or remaining <= 0:
                return got
            visible_at = self.next_visible_at(group, topic)
            if visible_at is not None:
                remaining = min(remaining, max(0.001, visible_at - self.now()))
            # No await since the empty attempt: parked before anything else runs on the loop.
            parked = self.hold.park(topic, flt, ends, remaining)
            if parked is None:  # the broker is stopping: answer what there is
                return got
            try:
                await parked.event.wait()
            finally:
                self.hold.leave(parked)  # nothing when it was woken; forgotten when cancelled

    def _queue_ids(self, topic: str, queue_id: int) -> Sequence[int]:
        """The readable queues of `topic` (none when it is unknown), or `queue_id` alone."""
        config = self.controller.topics.get(topic)
        if config is None:
            return ()
        return range(config.read_queue_nums) if queue_id < 0 else [queue_id]

    def _ends(self, topic: str, queue_id: int) -> dict[int, int]:
        """Each of those queues' end (max offset) now."""
        store = self.controller.store
        return {qid: store.max_offset(topic, qid) for qid in self._queue_ids(topic, queue_id)}

    def _wake_when_visible(self, group: str, topic: str) -> None:
        """Messages just handed out come back when their time runs out: wake the topic's
        parked pops then."""
        visible_at = self.next_visible_at(group, topic)
        if visible_at is not None:
            self.wake_later(topic, max(0.0, visible_at - self.now()))

    def wake_later(self, topic: str, delay_s: float) -> None:
        """A message of `topic` becomes visible in `delay_s` (re-armed, or at once for 0):
        its parked pops look again then.  `next_visible_at` alone would miss a re-armed one."""
        asyncio.get_running_loop().call_later(delay_s, self.hold.wake_pops, topic)

    def _open(self, group: str, topic: str, queue_id: int) -> QueuePop:
        store = self.controller.store
        q = self.table.queue(group, topic, queue_id)
        if q is None:
            committed = self.controller.offsets.query(group, topic, queue_id)
            start = committed if committed is not None else store.min_offset(topic, queue_id)
            q = self.table.open_queue(group, topic, queue_id, start)
        low = store.min_offset(topic, queue_id)
        if q.committed < low:
            self.table.skip_to((group, topic, queue_id), q, low)
        return q

    def _pop_queue(
        self,
        group: str,
        topic: str,
        queue_id: int,
        max_msgs: int,
        expression: tuple[TagExpression, Sql92Filter | None],
        when: tuple[float, float, int],
        fifo: bool,
    ) -> list[Popped]:
        now, until, seq = when
        key = (group, topic, queue_id)
        q = self._open(group, topic, queue_id)
        out: list[Popped] = []
        if fifo and q.held(now):
            return out  # the queue's oldest message is still out: nothing after it goes
        expired = q.expired(now)
        limit = self.max_attempts(group)
        for offset in expired:
            if len(out) >= max_msgs:
                break
            ext = self.controller.store.message_at(topic, queue_id, offset)
            if ext is None:  # gone from the store (retention): nothing to deliver
                self.table.finish(key, q, offset)
                continue
            if q.inflight[offset].attempt >= limit:
                self._dead_letter(group, ext, q.inflight[offset].attempt)
                self.table.finish(key, q, offset)
                continue
            f = self.table.redeliver(key, q, offset, until, seq)
            out.append(Popped(ext, make_handle(queue_id, offset, seq), f.attempt, seq))
        if (fifo and q.inflight) or len(out) >= max_msgs:
            self._commit(key, q)
            return out
        out += self._read_new(key, q, max_msgs - len(out), expression, until, seq)
        self._commit(key, q)
        return out

    def _read_new(
        self,
        key: tuple[str, str, int],
        q: QueuePop,
        max_msgs: int,
        expression: tuple[TagExpression, Sql92Filter | None],
        until: float,
        seq: int,
    ) -> list[Popped]:
        _, topic, queue_id = key
        tags, sql = expression
        codes = None if tags.matches_all else tags.codes
        got = self.controller.store.get_messages(
            topic,
            queue_id,
            q.scanned,
            max_msgs,
            tag_filter=None if codes is None else codes.__contains__,
        )
        if got.status not in (GetStatus.FOUND, GetStatus.NO_MATCHED_MESSAGE):
            return []
        taken: list[int] = []
        messages: list[MessageExt] = []
        for record, offset in zip(got.records, got.queue_offsets, strict=True):
            try:
                ext = decode_record(record)
            except ProtocolError:
                log.warning("pop: skipping an undecodable record at %s offset %d", key, offset)
                continue
            # The tags code is a hash: the tag itself decides (a collision is filtered here);
            # an SQL92 expression is evaluated on the properties.
            if (tags.matches_all or tags.matches_tag(ext.tags)) and (
                sql is None or sql.matches(ext.properties)
            ):
                taken.append(offset)
                messages.append(ext)
        delivered = self.table.deliver_new(key, q, taken, got.next_begin_offset, until, seq)
        return [
            Popped(ext, make_handle(queue_id, offset, seq), f.attempt, seq)
            for ext, offset, f in zip(messages, taken, delivered, strict=True)
        ]

    def _dead_letter(self, group: str, ext: MessageExt, attempts: int) -> None:
        """Store a copy in `%DLQ%<group>` (in-line, on the loop, as the send path appends)."""
        ctl = self.controller
        ctl.topics.ensure_dlq_topic(group)
        props = dict(ext.properties)
        props.setdefault(Prop.RETRY_TOPIC, ext.topic)
        props.setdefault(Prop.ORIGIN_MESSAGE_ID, ext.msg_id)
        copy = MessageInner.moved(
            ext, DLQ_GROUP_TOPIC_PREFIX + group, 0, props, reconsume_times=attempts
        )
        result = ctl.appender.store_message(copy)
        if result.status is not PutStatus.PUT_OK:
            log.error(
                "pop: dead-lettering %s of group %s failed: %s %s",
                ext.msg_id,
                group,
                result.status.value,
                result.error or "",
            )

    def _commit(self, key: tuple[str, str, int], q: QueuePop) -> None:
        group, topic, queue_id = key
        self.controller.offsets.commit(group, topic, queue_id, q.committed, answered=False)

    # ------------------------------------------------------------------ by handle

    def _in_flight(
        self, group: str, topic: str, handle: str
    ) -> tuple[tuple[str, str, int], QueuePop, int, InFlight]:
        queue_id, offset, seq = parse_handle(handle)
        key = (group, topic, queue_id)
        q = self.table.queue(*key)
        f = q.inflight.get(offset) if q is not None else None
        if q is None or f is None or f.seq != seq:
            raise Refusal(
                Reason.STALE_HANDLE,
                f"receipt handle {handle!r} is stale: the message was acked, delivered again "
                "or re-armed since, or the broker restarted",
            )
        return key, q, offset, f

    def handle_for(self, group: str, topic: str, queue_id: int, offset: int, seq_low: int) -> str:
        """The receipt handle a remoting checkpoint names (queue, offset and the low bits of
        seq); Refusal (STALE_HANDLE) when the message is no longer in flight under it."""
        q = self.table.queue(group, topic, queue_id)
        f = q.inflight.get(offset) if q is not None else None
        if f is None or f.seq & REMOTING_SEQ_MASK != seq_low:
            raise Refusal(
                Reason.STALE_HANDLE,
                f"no message of {topic} queue {queue_id} offset {offset} is in flight for "
                f"{group} under this checkpoint: acked, delivered again or re-armed since, "
                "or the broker restarted",
            )
        return make_handle(queue_id, offset, f.seq)

    def ack(self, group: str, topic: str, handle: str) -> None:
        """Done with the message; Refusal (STALE_HANDLE) when the handle is not the current one."""
        key, q, offset, _ = self._in_flight(group, topic, handle)
        self.table.finish(key, q, offset)
        self._commit(key, q)

    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> str:
        """Re-arm the message's invisibility from now; its new handle."""
        key, q, offset, _ = self._in_flight(group, topic, handle)
        f = self.table.rearm(q, offset, self._clock() + invisible_ms / 1000)
        return make_handle(key[2], offset, f.seq)

    def forward_to_dlq(self, group: str, topic: str, handle: str) -> None:
        """The client gave up on the message (FIFO push consumer): dead-letter it now."""
        key, q, offset, f = self._in_flight(group, topic, handle)
        ext = self.controller.store.message_at(topic, key[2], offset)
        if ext is not None:
            self._dead_letter(group, ext, f.attempt)
        self.table.finish(key, q, offset)
        self._commit(key, q)

    def next_visible_at(self, group: str, topic: str) -> float | None:
        """The next instant an in-flight message of the group's topic becomes visible again
        (None: none will).  Messages already visible but held back (FIFO) are not counted:
        an ack, not the clock, releases them."""
        now = self._clock()
        times = [
            f.until
            for (g, tp, _), q in self.table.items()
            if g == group and tp == topic
            for f in q.inflight.values()
            if f.until > now
        ]
        return min(times, default=None)


__all__ = ["PopService", "Popped", "Record"]
