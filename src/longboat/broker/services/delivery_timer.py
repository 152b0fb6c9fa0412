"""Timer messages delivered on time, of both protocols, and recalled before they are due.

The append path (`core/timers.py`, through the core's appender) stores a timer message in
`rmq_sys_wheel_timer` queue 0 with its due time as its consume-queue tags code; this service
hears each such arrival and keeps, per due time, the queue offsets due then (`TimerWheel`).
One `call_at` is armed for the earliest due time: an idle broker does nothing, however many
timers wait.  When due, each message is re-stored in its real topic (as the delay levels'
service does), in rounds of `ROUND` so a second with 10,000 timers never blocks the loop long.

State of one timer-queue offset (as data):

    PENDING --due time reached--> DELIVERED (re-stored in its topic)
    PENDING --RECALL_MESSAGE / RecallMessage with its handle--> RECALLED (never delivered)

Persistence: the messages are in the commit log; what is done is `config/timerCheckpoint.bin`
(`TimerCheckpoint`: every offset below `base` is done, then one bit per offset).  It is written
after each burst of deliveries (and each recall), after the copies were appended: a crash
between the two delivers those messages again (at least once, as RocketMQ), never loses one.
A restart rebuilds the wheel from the consume queue alone (tags codes, no commit-log read)
minus the done offsets.  The file is this broker's own: a slave copies instead the time before
which its master has delivered every timer (`timer_sync`, GET_TIMER_CHECK_POINT), and a slave
that becomes master counts the timers due before it done.

Who files an offset: only a running service, and each offset once.  `start` builds a new
wheel from the queue up to its end; from then on each arrival files the offsets past the last
filed one (`_filed`), one or several: the store tells of a batch or a replicated chunk once
per distinct due time, not once per message.  A broker that does not deliver (a slave in
controller mode, a master deposed) files nothing: the appends it hears are in the queue that
its next `start` reads, so a timer is never in the wheel twice nor delivered twice.

Memory: 8 bytes per pending timer in its due time's array, a dict entry and a heap entry per
distinct due time (at most `timerMaxDelaySec * 1000` / the grain, `timer_precision`: 259,200
by default), one bit per timer-queue offset since the oldest pending one.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from array import array
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.core.timers import (
    TIMER_QUEUE,
    TIMER_TOPIC,
    check_recall,
    decode_recall_handle,
)
from longboat.broker.services.delay_schedule import restored_message
from longboat.broker.services.timer_sync import SYNCED_FILE, checkpoint_body, done_before
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.properties import Prop
from longboat.store import PutStatus
from longboat.store.json_file import read_json, write_bytes_atomic

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "timerCheckpoint.bin"
LEGACY_PROGRESS_FILE = "timerProgress.json"
# Messages re-stored per loop callback.
ROUND = 1000
_SCAN_BATCH = 4096
_RETRY_S = 1.0


class TimerCheckpoint:
    """Which timer-queue offsets are done (delivered or recalled): all below `base` (a
    multiple of 8 above the queue's first), then a bitmap.  Invariant: bit i set iff offset
    base + i is done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = 0
        self._bits = bytearray()

    def load(self, min_offset: int) -> None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raw = b""
        if len(raw) >= 8:
            self.base = int.from_bytes(raw[:8], "big")
            self._bits = bytearray(raw[8:])
        elif (legacy := read_json(self.path.with_name(LEGACY_PROGRESS_FILE))) is not None:
            # The gRPC-only timers' progress of earlier versions: `low` and the done above it.
            self.base = int(legacy.get("low", 0))
            self.mark([int(o) for o in legacy.get("done", [])])
        if self.base < min_offset:  # the queue's first files were deleted: done with them
            drop = (min_offset - self.base) // 8
            del self._bits[:drop]
            self.base += drop * 8
            self.mark(list(range(self.base, min_offset)))

    def done(self, offset: int) -> bool:
        i = offset - self.base
        if i < 0:
            return True
        byte = i >> 3
        return byte < len(self._bits) and bool(self._bits[byte] >> (i & 7) & 1)

    def mark(self, offsets: list[int]) -> None:
        for offset in offsets:
            i = offset - self.base
            if i < 0:
                continue
            byte = i >> 3
            if byte >= len(self._bits):
                self._bits.extend(bytes(byte + 1 - len(self._bits)))
            self._bits[byte] |= 1 << (i & 7)
        full = 0
        while full < len(self._bits) and self._bits[full] == 0xFF:
            full += 1
        if full:
            del self._bits[:full]
            self.base += full * 8

    def save(self) -> None:
        write_bytes_atomic(self.path, self.base.to_bytes(8, "big") + bytes(self._bits))


class TimerWheel:
    """Pending timers by due time: due ms -> the timer-queue offsets due then, and a heap of
    the due times (each pushed once, when its first timer arrives)."""

    def __init__(self) -> None:
        self.slots: dict[int, array[int]] = {}
        self.heap: list[int] = []
        self.pending = 0

    def add(self, due_ms: int, offset: int) -> None:
        slot = self.slots.get(due_ms)
        if slot is None:
            slot = self.slots[due_ms] = array("q")
            heapq.heappush(self.heap, due_ms)
        slot.append(offset)
        self.pending += 1

    def remove(self, due_ms: int, offset: int) -> bool:
        slot = self.slots.get(due_ms)
        if slot is None or offset not in slot:
            return False
        slot.remove(offset)
        self.pending -= 1
        return True

    def due_counts(self) -> tuple[list[int], list[int]]:
        """The due times (ms, in no order) and, aligned, how many timers each has (0 for a
        slot emptied but not yet dropped).  It only reads, so the metrics scrape's thread
        may call it: the dict is copied in one step under the GIL (int keys run no Python
        code), where `earliest` would pop."""
        slots = self.slots.copy()
        return list(slots), list(map(len, slots.values()))

    def earliest(self) -> int | None:
        """The earliest due time with a timer (empty slots are dropped on the way)."""
        while self.heap and not self.slots.get(self.heap[0]):
            self.slots.pop(heapq.heappop(self.heap), None)
        return self.heap[0] if self.heap else None

    def take(self, now_ms: int, limit: int) -> list[tuple[int, int]]:
        """Up to `limit` (due ms, offset) due at `now_ms`, taken out of the wheel."""
        taken: list[tuple[int, int]] = []
        while len(taken) < limit:
            due = self.earliest()
            if due is None or due > now_ms:
                break
            slot = self.slots[due]
            n = min(limit - len(taken), len(slot))
            taken.extend((due, offset) for offset in slot[:n])
            del slot[:n]
            self.pending -= n
        return taken


class TimerService:
    def __init__(self, controller: CoreHost, *, clock: Callable[[], float] = time.time) -> None:
        self.controller = controller
        self._clock = clock
        config_dir = controller.config.store_path_root_dir / "config"
        self.checkpoint = TimerCheckpoint(config_dir / CHECKPOINT_FILE)
        # What this broker copied of its master's progress while it was a slave.
        self.synced_path = config_dir / SYNCED_FILE
        # Start's scan: every timer due before this is done (its master delivered it).
        self._done_before = 0
        self.wheel = TimerWheel()
        # The timer-queue end filed so far: every offset below it is in the wheel or done.
        self._filed = 0
        # RocketMQ's rocketmq_timer_enqueue_total / dequeue_total, by real topic.
        self.enqueued: Counter[str] = Counter()
        self.dequeued: Counter[str] = Counter()
        self._timer: asyncio.Handle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Load what is done and build the wheel anew from the timer queue's tags codes (a
        broker becoming master again starts again: nothing it held before is kept)."""
        self._loop = asyncio.get_running_loop()
        store = self.controller.store
        self.checkpoint.load(store.min_offset(TIMER_TOPIC, TIMER_QUEUE))
        self.wheel = TimerWheel()
        self._filed = max(self.checkpoint.base, store.min_offset(TIMER_TOPIC, TIMER_QUEUE))
        self._done_before = done_before(self.synced_path, store.max_physical_offset)
        self._file_up_to(store.max_offset(TIMER_TOPIC, TIMER_QUEUE))
        self._done_before = 0
        self._arm()

    def stop(self) -> None:
        """Stop delivering and drop the wheel: the next `start` builds it from the queue."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = None
        self.wheel = TimerWheel()

    def on_arrival(
        self, topic: str, queue_id: int, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> None:
        """Timer messages were appended (arrival listener, on the loop): the running service
        files each offset up to `new_max` not filed yet."""
        filed = self._filed
        if topic != TIMER_TOPIC or self._loop is None or new_max <= filed:
            return
        self.enqueued[props.get(Prop.REAL_TOPIC, "")] += new_max - filed
        if new_max == filed + 1:  # one message, as every send appends it: no read
            self.wheel.add(tags_code, filed)
            self._filed = new_max
            if self.wheel.earliest() == tags_code:
                self._arm()
        else:
            self._file_up_to(new_max)
            self._arm()

    def _file_up_to(self, end: int) -> None:
        """File the timer-queue offsets from `_filed` to `end` that are not done, by the due
        times their entries carry."""
        store = self.controller.store
        offset = self._filed
        done_before = self._done_before
        delivered: list[int] = []
        while offset < end:
            count = min(_SCAN_BATCH, end - offset)
            codes = store.tags_codes(TIMER_TOPIC, TIMER_QUEUE, offset, count)
            if not codes:
                break
            for due in codes:
                if due < done_before:
                    delivered.append(offset)
                elif not self.checkpoint.done(offset):
                    self.wheel.add(due, offset)
                offset += 1
        self._filed = max(self._filed, offset)
        if delivered:  # by the master this broker followed
            self.checkpoint.mark(delivered)
            self.checkpoint.save()

    def checkpoint_answer(self, conn: object, cmd: RemotingCommand) -> RemotingCommand:
        """GET_TIMER_CHECK_POINT: this master's progress, for its slaves (`timer_sync`);
        refused by a broker that does not deliver timers."""
        if self._loop is None:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, "this broker does not deliver timer messages now"
            )
        store = self.controller.store
        now_ms = int(self._clock() * 1000)
        earliest = self.wheel.earliest()
        body = checkpoint_body(
            now_ms if earliest is None else min(now_ms, earliest),
            self._filed,
            store.max_offset(TIMER_TOPIC, TIMER_QUEUE),
            store.max_physical_offset,
            now_ms,
        )
        return cmd.make_response(body=body)

    # ------------------------------------------------------------------ recall

    def recall(self, topic: str, raw_handle: str) -> str:
        """Recall a pending timer message of `topic`; its message id.  Refusal
        (ILLEGAL_OPERATION, RocketMQ's remarks) for a handle that is not one, names another
        topic or broker, or is due already.  A well-formed handle naming no pending message
        is answered as RocketMQ does: with its message id, nothing else happens."""
        if self.controller.topics.get(topic) is None:
            raise Refusal(Reason.TOPIC_NOT_FOUND, f"recall failed, the topic[{topic}] not exist")
        handle = decode_recall_handle(raw_handle)
        cfg = self.controller.config
        now_ms = int(self._clock() * 1000)
        check_recall(handle, topic, cfg.broker_name, now_ms, cfg.timer_max_delay_sec)
        due = handle.timestamp_ms - 1
        for offset in list(self.wheel.slots.get(due, ())):
            ext = self.controller.store.message_at(TIMER_TOPIC, TIMER_QUEUE, offset)
            if (
                ext is not None
                and ext.properties.get(Prop.REAL_TOPIC) == topic
                and ext.msg_id == handle.message_id
                and self.wheel.remove(due, offset)
            ):
                self.checkpoint.mark([offset])
                self.checkpoint.save()
                break
        return handle.message_id

    # ------------------------------------------------------------------ delivering

    @property
    def pending(self) -> int:
        return self.wheel.pending

    def due_counts(self) -> tuple[list[int], list[int]]:
        return self.wheel.due_counts()

    def _arm(self) -> None:
        loop = self._loop
        due = self.wheel.earliest()
        if loop is None or due is None:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, due / 1000 - self._clock())
        self._timer = loop.call_later(delay, self._deliver_due)

    def _deliver_due(self) -> None:
        self._timer = None
        now_ms = int(self._clock() * 1000)
        taken = self.wheel.take(now_ms, ROUND)
        done: list[int] = []
        delivered: Counter[str] = Counter()
        for i, (_, offset) in enumerate(taken):
            ext = self.controller.store.message_at(TIMER_TOPIC, TIMER_QUEUE, offset)
            restored = restored_message(ext) if ext is not None else None
            if ext is not None and restored is not None:
                # As RocketMQ's timer store: when the timer entered the wheel, and left it.
                restored.properties[Prop.TIMER_ENQUEUE_MS] = str(ext.store_timestamp)
                restored.properties[Prop.TIMER_DEQUEUE_MS] = str(now_ms)
                result = self.controller.appender.store_message(restored)
                if result.status is not PutStatus.PUT_OK:
                    log.error(
                        "timer: delivering %s failed (%s); retrying in a second",
                        ext.msg_id if ext else offset,
                        result.error or result.status.value,
                    )
                    for later_due, later in taken[i:]:
                        self.wheel.add(later_due, later)
                    break
                delivered[restored.topic] += 1
            done.append(offset)
        if done:
            self.dequeued.update(delivered)
            self.checkpoint.mark(done)
        more = len(done) == len(taken) == ROUND and self._loop is not None
        if done and not more:
            # Once per burst, not per round: a crash before it re-delivers the burst (at
            # least once), and a second of 10,000 due timers costs one write, not ten.
            self.checkpoint.save()
        if len(done) < len(taken):
            assert self._loop is not None
            self._timer = self._loop.call_later(_RETRY_S, self._deliver_due)
        elif more:
            assert self._loop is not None
            self._timer = self._loop.call_soon(self._deliver_due)
        else:
            self._arm()


def install(controller: CoreHost) -> TimerService | None:
    """Deliver timer messages while the broker runs (a slave's are delivered by its
    master; in controller mode, by whichever broker is master at the moment); the service,
    which recall and the metrics use."""
    cfg = controller.config
    if cfg.is_slave and not cfg.enable_controller_mode:
        return None
    service = TimerService(controller, clock=controller.clock)
    controller.add_arrival_listener(service.on_arrival)
    controller.router.register(RequestCode.GET_TIMER_CHECK_POINT, service.checkpoint_answer)
    if cfg.enable_controller_mode:  # the master of the moment delivers them
        controller.add_master_hooks(service.start, service.stop)
    else:
        controller.add_start_hook(service.start)
        controller.add_stop_hook(service.stop)
    return service
