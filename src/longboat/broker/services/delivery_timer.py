"""Delayed messages with a delivery time of their own (RocketMQ 5's DELAY type), and recalling
them before they are due.

A 4.x delay level waits a fixed step; a 5.x producer names the instant (`delivery_timestamp`).
Such a message is stored at once in `rmq_sys_wheel_timer` (RocketMQ's timer topic), queue 0,
with REAL_TOPIC / REAL_QID saying where it belongs and its consume-queue tags code set to its
delivery time, so a restart rebuilds the pending set from the queue alone.  The pending set is
a heap on the event loop with one `call_at` for its earliest entry; when due, the message is
re-stored in its real topic (as the delay-level service does) and consumers see it then.

State of one timer-queue offset (as data):

    PENDING --due time reached--> DELIVERED (re-stored in its topic)
    PENDING --RecallMessage with its handle--> RECALLED (never delivered)

Progress is `config/timerProgress.json`: `low` (every offset below is DELIVERED or RECALLED)
and the offsets above it that are.  It is written after each round of deliveries and each
recall, after the re-stored copies were appended: a crash in between delivers a message twice
(at least once), never loses one.  A recall handle is `timer:<offset>:<message id>`.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.services.delay_schedule import restored_message
from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.store import GetStatus, MessageInner, PutResult, PutStatus
from longboat.store.json_file import read_json, write_json_atomic

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

log = logging.getLogger(__name__)

TIMER_TOPIC = "rmq_sys_wheel_timer"
TIMER_QUEUE = 0
# RocketMQ's timerMaxDelaySec default: three days.
MAX_DELAY_MS = 3 * 24 * 3600 * 1000
_READ_BATCH = 256


class TimerService:
    def __init__(self, controller: CoreHost, *, clock: Callable[[], float] = time.time) -> None:
        self.controller = controller
        self._clock = clock
        self._path = controller.config.store_path_root_dir / "config" / "timerProgress.json"
        self._low = 0
        self._done: set[int] = set()
        self._heap: list[tuple[int, int]] = []  # (deliver_ms, timer-queue offset)
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Load progress and rebuild the pending set from the timer queue."""
        self._loop = asyncio.get_running_loop()
        saved = read_json(self._path) or {}
        store = self.controller.store
        self._low = max(int(saved.get("low", 0)), store.min_offset(TIMER_TOPIC, TIMER_QUEUE))
        self._done = {int(o) for o in saved.get("done", []) if int(o) >= self._low}
        offset = self._low
        while True:
            got = store.get_messages(TIMER_TOPIC, TIMER_QUEUE, offset, _READ_BATCH)
            if got.status is not GetStatus.FOUND:
                break
            for record, queue_offset in zip(got.records, got.queue_offsets, strict=True):
                if queue_offset in self._done:
                    continue
                ext = _decode(record)
                if ext is not None:
                    heapq.heappush(self._heap, (_deliver_ms(ext), queue_offset))
            offset = got.next_begin_offset
        self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = None

    # ------------------------------------------------------------------ scheduling

    def schedule(self, msg: MessageInner, deliver_ms: int) -> PutResult:
        """Store `msg` (bound for its topic and queue) in the timer queue until `deliver_ms`;
        its recall handle is `recall_handle(result)`."""
        props = msg.properties
        props[Prop.REAL_TOPIC] = msg.topic
        props[Prop.REAL_QID] = str(msg.queue_id)
        props[Prop.TIMER_DELIVER_MS] = str(deliver_ms)
        msg.topic = TIMER_TOPIC
        msg.queue_id = TIMER_QUEUE
        msg.tags_code = deliver_ms
        result = self.controller.appender.store_message(msg)
        if result.status is PutStatus.PUT_OK:
            heapq.heappush(self._heap, (deliver_ms, result.records[0].queue_offset))
            self._arm()
        return result

    @staticmethod
    def recall_handle(result: PutResult, message_id: str) -> str:
        return f"timer:{result.records[0].queue_offset}:{message_id}"

    def recall(self, topic: str, handle: str) -> str:
        """Cancel a pending delayed message of `topic`; its message id.  Refusal (NOT_FOUND)
        when the handle names none (delivered, recalled, or not ours)."""
        try:
            kind, raw_offset, message_id = handle.split(":", 2)
            offset = int(raw_offset)
        except ValueError:
            raise Refusal(
                Reason.NOT_FOUND, f"{handle!r} is not a recall handle of this broker"
            ) from None
        pending = {o for _, o in self._heap}
        if kind != "timer" or offset not in pending:
            raise Refusal(
                Reason.NOT_FOUND,
                f"no pending delayed message for recall handle {handle!r} "
                "(delivered or recalled already?)",
            )
        ext = self._read(offset)
        if ext is None or ext.properties.get(Prop.REAL_TOPIC) != topic or ext.msg_id != message_id:
            raise Refusal(
                Reason.NOT_FOUND, f"recall handle {handle!r} does not name a message of {topic!r}"
            )
        self._heap = [(due, o) for due, o in self._heap if o != offset]
        heapq.heapify(self._heap)
        self._finish([offset])
        return message_id

    # ------------------------------------------------------------------ delivering

    def _arm(self) -> None:
        loop = self._loop
        if loop is None or not self._heap:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, self._heap[0][0] / 1000 - self._clock())
        self._timer = loop.call_later(delay, self._deliver_due)

    def _deliver_due(self) -> None:
        self._timer = None
        now_ms = int(self._clock() * 1000)
        delivered: list[int] = []
        while self._heap and self._heap[0][0] <= now_ms:
            _, offset = heapq.heappop(self._heap)
            ext = self._read(offset)
            restored = restored_message(ext) if ext is not None else None
            if restored is not None:
                result = self.controller.appender.store_message(restored)
                if result.status is not PutStatus.PUT_OK:
                    log.error(
                        "timer: delivering %s failed (%s); retrying in a second",
                        ext.msg_id if ext else offset,
                        result.error or result.status.value,
                    )
                    heapq.heappush(self._heap, (now_ms + 1000, offset))
                    break
            delivered.append(offset)
        if delivered:
            self._finish(delivered)
        self._arm()

    def _finish(self, offsets: list[int]) -> None:
        self._done.update(offsets)
        while self._low in self._done:
            self._done.discard(self._low)
            self._low += 1
        write_json_atomic(self._path, {"low": self._low, "done": sorted(self._done)})

    def _read(self, offset: int) -> MessageExt | None:
        got = self.controller.store.get_messages(TIMER_TOPIC, TIMER_QUEUE, offset, 1)
        if got.status is not GetStatus.FOUND or got.queue_offsets[0] != offset:
            return None
        return _decode(got.records[0])


def _decode(record: bytes | memoryview) -> MessageExt | None:
    try:
        return decode_record(record)
    except ProtocolError:
        return None


def _deliver_ms(ext: MessageExt) -> int:
    raw = ext.properties.get(Prop.TIMER_DELIVER_MS, "")
    return int(raw) if raw.isdigit() else 0
