"""The delay-level service: delivers `SCHEDULE_TOPIC_XXXX` messages to their real topic when due.

Each level has its own queue in the schedule topic (see delay_levels), filled in store order
with one fixed delay, so the head of a level's queue is always the next message due there.  A
level therefore needs one timer, set for its head's delivery time — no scan, no busy loop —
and a new arrival only has to arm a level that had nothing pending.

Per level (state as data, driven on the event loop):

    IDLE --arrival--> ARMED(due)            a message now pending; timer at its due time
    ARMED(t) --arrival due < t--> ARMED(due) the clock moved; wake earlier
    ARMED --timer--> DELIVERING             a task re-stores every due head in turn
    DELIVERING --arrival--> DELIVERING      the task re-reads the queue before it stops
    DELIVERING --head not due--> ARMED(due)
    DELIVERING --queue drained--> IDLE
    DELIVERING --store refuses (transient)--> ARMED(now + retry pause)
    any --stop--> STOPPED                   timer cancelled, running task awaited

Invariants: at most one timer or one task per level; a level with messages past its progress
offset is never IDLE (the IDLE decision and the empty read happen with no await between them,
and arrivals come on the loop thread, so none can slip in); progress only moves past a message
once its re-stored copy is in the store.

Progress (level → next schedule-queue offset) is persisted in `config/delayOffset.json`,
RocketMQ's file, within a second of a change and at stop, after a store flush, so the file
never runs ahead of the delivered copies: a crash re-delivers at most the last second's
messages (at-least-once), never loses one.  A message whose due time passed during downtime is
delivered at start.  If the wall clock jumps back, no message waits longer than its level's
delay (RocketMQ's deliver-time correction).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from longboat.broker.delay_levels import SCHEDULE_TOPIC, DelayLevels
from longboat.protocol import ProtocolError, RequestCode
from longboat.protocol.fastjson import dumps as json_dumps
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.store import GetStatus, MessageInner, MessageStore, PutResult, PutStatus
from longboat.store.json_file import read_json, write_json_atomic

if TYPE_CHECKING:
    from longboat.broker.feature_host import FeatureHost

log = logging.getLogger(__name__)

PutMessage = Callable[[MessageInner], Awaitable[PutResult]]

# Put outcomes that can never succeed for this message: skipping it beats a level stuck forever.
_HOPELESS = frozenset({PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED})
# Stored, if not yet as durably as asked: delivered.
_STORED = frozenset({PutStatus.PUT_OK, PutStatus.FLUSH_DISK_TIMEOUT})
RETRY_PAUSE_S = 1.0
PERSIST_EVERY_S = 1.0
_READ_BATCH = 32


class Phase(Enum):
    IDLE = "IDLE"
    ARMED = "ARMED"
    DELIVERING = "DELIVERING"
    STOPPED = "STOPPED"


@dataclass(slots=True)
class _Level:
    level: int
    offset: int  # next schedule-queue offset to deliver
    phase: Phase = Phase.IDLE
    due_ms: int = 0  # while ARMED
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task[None] | None = None

    @property
    def queue_id(self) -> int:
        return self.level - 1


def restored_message(msg: MessageExt) -> MessageInner | None:
    """The message as it goes back to its real topic and queue: DELAY removed (REAL_TOPIC /
    REAL_QID stay, as in RocketMQ); None when the record does not say where it belongs."""
    props = dict(msg.properties)
    topic = props.get(Prop.REAL_TOPIC)
    try:
        queue_id = int(props.get(Prop.REAL_QID, ""))
    except ValueError:
        return None
    if not topic:
        return None
    props.pop(Prop.DELAY, None)
    return MessageInner.moved(msg, topic, queue_id, props)


@dataclass(eq=False, slots=True)
class ScheduleService:
    """Delivers the delay levels' messages when due.  `put_message` stores a message the way
    the send path does (and waits under SYNC_FLUSH); `clock` is the wall clock in seconds,
    the store's time base."""

    store: MessageStore
    levels: DelayLevels
    put_message: PutMessage
    progress_path: Path
    _: KW_ONLY
    clock: Callable[[], float] = time.time
    _levels: dict[int, _Level] = field(default_factory=dict, init=False)
    _dirty: bool = field(default=False, init=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _loop_thread: int = field(default=0, init=False)
    _persist_timer: asyncio.TimerHandle | None = field(default=None, init=False)
    _persisting: asyncio.Task[None] | None = field(default=None, init=False)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Load progress and start every level that has messages pending (on the loop)."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        saved = self._load_progress()
        known = set(range(1, self.levels.max_level + 1))
        known |= {q + 1 for q in self.store.queue_ids(SCHEDULE_TOPIC)}
        for level in sorted(known):
            self._levels[level] = _Level(level, saved.get(level, 0))
        for state in self._levels.values():
            self._run(state)

    async def stop(self) -> None:
        """Stop every level (in-flight deliveries finish), then persist progress."""
        tasks = []
        for state in self._levels.values():
            if state.timer is not None:
                state.timer.cancel()
                state.timer = None
            if state.task is not None:
                tasks.append(state.task)
            state.phase = Phase.STOPPED
        if self._persist_timer is not None:
            self._persist_timer.cancel()
        if self._persisting is not None:
            tasks.append(self._persisting)
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._persist()

    # ------------------------------------------------------------------ arrivals

    def on_arrival(
        self, topic: str, queue_id: int, new_max: int, tags_code: int, props: Mapping[str, str]
    ) -> None:
        """Store arrival listener: a schedule-topic arrival arms its level."""
        if topic != SCHEDULE_TOPIC or self._loop is None:
            return
        if threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self._arrived, queue_id + 1, tags_code)
        else:
            self._arrived(queue_id + 1, tags_code)

    def _arrived(self, level: int, due_ms: int) -> None:
        state = self._levels.get(level)
        if state is None:  # a level beyond the ladder (it was longer when this was stored)
            state = _Level(level, self.store.min_offset(SCHEDULE_TOPIC, level - 1))
            self._levels[level] = state
        if state.phase is Phase.IDLE or (state.phase is Phase.ARMED and due_ms < state.due_ms):
            self._arm(state, due_ms)

    # ------------------------------------------------------------------ transitions

    def _arm(self, state: _Level, due_ms: int) -> None:
        assert self._loop is not None
        if state.timer is not None:
            state.timer.cancel()
        now_ms = int(self.clock() * 1000)
        # Never wait past one level delay from now, whatever the clock did since the store.
        due_ms = min(due_ms, now_ms + self.levels.delay_ms(state.level))
        state.phase = Phase.ARMED
        state.due_ms = due_ms
        state.timer = self._loop.call_later(max(0.0, (due_ms - now_ms) / 1000), self._run, state)

    def _run(self, state: _Level) -> None:
        if state.phase is Phase.STOPPED:
            return
        state.timer = None
        state.phase = Phase.DELIVERING
        state.task = asyncio.ensure_future(self._deliver(state))

    async def _deliver(self, state: _Level) -> None:
        try:
            next_due = await self._deliver_due(state)
        except Exception:
            log.exception("delay level %d: delivery failed; retrying", state.level)
            next_due = int(self.clock() * 1000 + RETRY_PAUSE_S * 1000)
        finally:
            state.task = None
        if state.phase is Phase.STOPPED:
            return
        if next_due is None:
            state.phase = Phase.IDLE
        else:
            self._arm(state, next_due)

    async def _deliver_due(self, state: _Level) -> int | None:
        """Re-store due heads until one is not due (its due time) or the queue is drained
        (None).  Returns with no await between the last read and the decision."""
        store, qid = self.store, state.queue_id
        while state.phase is not Phase.STOPPED:
            got = store.get_messages(SCHEDULE_TOPIC, qid, state.offset, _READ_BATCH)
            if got.status in (GetStatus.OFFSET_TOO_SMALL, GetStatus.OFFSET_OVERFLOW_BADLY):
                log.warning(
                    "delay level %d: progress %d outside the queue [%d, %d); moving to %d",
                    state.level,
                    state.offset,
                    got.min_offset,
                    got.max_offset,
                    got.next_begin_offset,
                )
                self._advance(state, got.next_begin_offset)
                continue
            if got.status is GetStatus.MESSAGE_WAS_REMOVING:
                self._advance(state, got.next_begin_offset)
                continue
            if got.status is not GetStatus.FOUND:
                return None
            for record, offset in zip(got.records, got.queue_offsets, strict=True):
                try:
                    msg = decode_record(record)
                except ProtocolError as exc:
                    log.error(
                        "delay level %d: record %d unreadable (%s); skipped",
                        state.level,
                        offset,
                        exc,
                    )
                    self._advance(state, offset + 1)
                    continue
                due = self.levels.deliver_at(state.level, msg.store_timestamp)
                if due > int(self.clock() * 1000):
                    return due
                retry_at = await self._deliver_one(state, msg)
                if retry_at is not None:
                    return retry_at
                self._advance(state, offset + 1)
                if state.phase is Phase.STOPPED:
                    return None
            self._advance(state, got.next_begin_offset)
        return None

    async def _deliver_one(self, state: _Level, msg: MessageExt) -> int | None:
        """Re-store one message; None when done with it, else when to try again."""
        inner = restored_message(msg)
        if inner is None:
            log.error(
                "delay level %d: record at %d has no REAL_TOPIC/REAL_QID; skipped",
                state.level,
                msg.commit_log_offset,
            )
            return None
        result = await self.put_message(inner)
        if result.status in _STORED:
            return None
        if result.status in _HOPELESS:
            log.error(
                "delay level %d: %s refused for good (%s: %s); skipped",
                state.level,
                msg.offset_msg_id,
                result.status.value,
                result.error,
            )
            return None
        log.warning(
            "delay level %d: store refused %s (%s: %s); retrying in %.0f s",
            state.level,
            msg.offset_msg_id,
            result.status.value,
            result.error,
            RETRY_PAUSE_S,
        )
        return int(self.clock() * 1000 + RETRY_PAUSE_S * 1000)

    def _advance(self, state: _Level, offset: int) -> None:
        if offset != state.offset:
            state.offset = offset
            self._mark_dirty()

    def _mark_dirty(self) -> None:
        """Progress changed: save it within PERSIST_EVERY_S (no timer runs while idle)."""
        self._dirty = True
        if self._persist_timer is None and self._loop is not None:
            self._persist_timer = self._loop.call_later(PERSIST_EVERY_S, self._persist_soon)

    def _persist_soon(self) -> None:
        self._persist_timer = None
        if self._persisting is None:
            self._persisting = asyncio.ensure_future(self._persist_in_background())

    async def _persist_in_background(self) -> None:
        try:
            await self._persist()
        except OSError as exc:
            log.error("delay progress not saved (%s); retrying", exc)
            self._mark_dirty()
        finally:
            self._persisting = None

    # ------------------------------------------------------------------ progress

    def offsets(self) -> dict[int, int]:
        """Level → next schedule-queue offset to deliver."""
        return {level: s.offset for level, s in sorted(self._levels.items())}

    def pending(self) -> dict[int, int]:
        """Level → messages stored but not yet delivered (a metric, and what tests wait on)."""
        return {
            level: self.store.max_offset(SCHEDULE_TOPIC, s.queue_id) - s.offset
            for level, s in sorted(self._levels.items())
        }

    def _load_progress(self) -> dict[int, int]:
        data = read_json(self.progress_path) or {}
        return {int(k): int(v) for k, v in (data.get("offsetTable") or {}).items()}

    async def _persist(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        table = {str(level): offset for level, offset in self.offsets().items()}
        loop = asyncio.get_running_loop()
        # The flush first: the file must never claim a delivery whose copy could be lost.
        await loop.run_in_executor(None, self.store.flush)
        await loop.run_in_executor(
            None, write_json_atomic, self.progress_path, {"offsetTable": table}
        )


# The delay levels' progress, in the store's config directory (RocketMQ's name).
DELAY_OFFSET_FILE = "delayOffset.json"


def delay_offset_body(service: ScheduleService) -> bytes:
    """GET_ALL_DELAY_OFFSET's body: the progress file's shape, `{"offsetTable": {level: n}}`."""
    return json_dumps({"offsetTable": {str(k): v for k, v in service.offsets().items()}})


def install(controller: FeatureHost) -> None:
    store = controller.store
    levels = controller.delay_levels
    service = ScheduleService(
        store, levels, controller.put_message, store.config.config_dir / DELAY_OFFSET_FILE
    )
    if controller.config.enable_controller_mode:  # the master of the moment delivers it
        store.add_arrival_listener(service.on_arrival)
        controller.add_master_hooks(service.start, service.stop)
    elif not controller.config.is_slave:  # a slave holds the schedule; its master delivers it
        store.add_arrival_listener(service.on_arrival)
        controller.add_start_hook(service.start)
        controller.add_stop_hook(service.stop)
    controller.router.register(
        RequestCode.GET_ALL_DELAY_OFFSET,
        lambda conn, cmd: cmd.make_response(body=delay_offset_body(service)),
    )
