"""Delay levels: the `messageDelayLevel` ladder and the schedule-topic rewrite of a delayed message.

A message with property DELAY = n > 0 is not stored in its topic but in `SCHEDULE_TOPIC_XXXX`,
queue n - 1, with REAL_TOPIC / REAL_QID naming where it belongs and its consume-queue tags code
set to the delivery time; the schedule service re-stores it there when due.  Because one queue
holds one level, its entries are due in the order they were stored, so the service only ever
looks at the head of each queue.

The ladder is RocketMQ's `messageDelayLevel` string, e.g. "1s 5s 10s 30s 1m 2m ... 2h": one
duration per level (parsed by `longboat.protocol.delay_ladder`, which the client shares).
"""

from __future__ import annotations

from dataclasses import dataclass

from longboat.protocol.delay_ladder import parse_ladder
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import SCHEDULE_TOPIC
from longboat.store.message_inner import MessageInner


@dataclass(frozen=True, slots=True)
class DelayLevels:
    """Level n (1-based) waits `delays_ms[n - 1]`; levels above the last are clamped to it."""

    delays_ms: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> DelayLevels:
        """Parse a `messageDelayLevel` string; ValueError names the item that is wrong."""
        delays = parse_ladder(text)
        if not delays:
            raise ValueError("messageDelayLevel is empty: it needs at least one duration")
        return cls(delays)

    @property
    def max_level(self) -> int:
        return len(self.delays_ms)

    def clamp(self, level: int) -> int:
        """RocketMQ clamps a level above the ladder to its last level."""
        return min(level, self.max_level)

    def queue_id(self, level: int) -> int:
        return self.clamp(level) - 1

    def level_of_queue(self, queue_id: int) -> int:
        return queue_id + 1

    def delay_ms(self, level: int) -> int:
        return self.delays_ms[self.clamp(level) - 1]

    def deliver_at(self, level: int, store_ms: int) -> int:
        return store_ms + self.delay_ms(level)

    def tags_code_of(self, msg: MessageExt) -> int | None:
        """The consume-queue tags code of a stored schedule-topic record (its delivery time),
        None for any other record.  The store calls this when it rebuilds queues on recovery."""
        if msg.topic != SCHEDULE_TOPIC:
            return None
        return self.deliver_at(self.level_of_queue(msg.queue_id), msg.store_timestamp)


def delay_level_of(properties: dict[str, str]) -> int:
    """The DELAY property as a level; 0 (not delayed) when absent, not a number, or <= 0.

    A DELAY that does not parse is stored undelayed rather than refused: ali-ons' fallback
    sends DELAY "0", and refusing would turn a client's sloppiness into a lost retry."""
    raw = properties.get(Prop.DELAY)
    if not raw:
        return 0
    try:
        level = int(raw)
    except ValueError:
        return 0
    return max(level, 0)


def reroute_delayed(msg: MessageInner, levels: DelayLevels, now_ms: int) -> bool:
    """Rewrite a delayed message in place to its schedule-topic queue; False when not delayed.

    Only plain and committed messages are delayed (a prepared transaction half is not).  The
    rewritten message keeps DELAY (clamped to the ladder), gains REAL_TOPIC / REAL_QID and
    carries its delivery time as its tags code, computed from `now_ms` (the store time)."""
    level = delay_level_of(msg.properties)
    if level <= 0 or not MessageSysFlag.is_consumable_transaction_type(msg.sys_flag):
        return False
    level = levels.clamp(level)
    props = msg.properties
    props[Prop.DELAY] = str(level)
    props[Prop.REAL_TOPIC] = msg.topic
    props[Prop.REAL_QID] = str(msg.queue_id)
    msg.topic = SCHEDULE_TOPIC
    msg.queue_id = levels.queue_id(level)
    msg.tags_code = levels.deliver_at(level, now_ms)
    return True
