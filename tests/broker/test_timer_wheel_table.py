"""The timer service's two tables driven by hand: the wheel (pending timers by due time) and
the checkpoint (which timer-queue offsets are done), with no broker and no clock; and how
the service files a store's timers in its wheel (a store, no broker)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

from longboat.broker.core.timers import TIMER_QUEUE, TIMER_TOPIC, timer_tags_code
from longboat.broker.services.delivery_timer import TimerCheckpoint, TimerService, TimerWheel
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.store import MessageInner, MessageStore
from store.helpers import small_config

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost


def test_the_wheel_gives_what_is_due_in_due_order_and_no_more_than_asked() -> None:
    wheel = TimerWheel()
    for due, offset in [(3000, 0), (1000, 1), (2000, 2), (1000, 3), (5000, 4)]:
        wheel.add(due, offset)
    assert wheel.pending == 5 and wheel.earliest() == 1000
    assert wheel.take(2500, limit=2) == [(1000, 1), (1000, 3)]
    assert wheel.take(2500, limit=10) == [(2000, 2)]
    assert wheel.take(2500, limit=10) == []  # 3000 is not due at 2500
    assert wheel.remove(3000, 0) and not wheel.remove(3000, 0)
    assert wheel.earliest() == 5000 and wheel.pending == 1


def test_the_checkpoint_keeps_done_offsets_across_a_reload_and_compacts_its_prefix(
    tmp_path: Path,
) -> None:
    path = tmp_path / "timerCheckpoint.bin"
    checkpoint = TimerCheckpoint(path)
    checkpoint.load(min_offset=0)
    checkpoint.mark([*range(0, 8), 9, 20])
    assert checkpoint.base == 8  # the first byte was all done: dropped
    checkpoint.save()
    again = TimerCheckpoint(path)
    again.load(min_offset=0)
    assert [o for o in range(24) if again.done(o)] == [*range(0, 8), 9, 20]


def test_offsets_below_the_queue_s_first_are_done(tmp_path: Path) -> None:
    checkpoint = TimerCheckpoint(tmp_path / "timerCheckpoint.bin")
    checkpoint.load(min_offset=13)
    assert all(checkpoint.done(o) for o in range(13))
    assert not checkpoint.done(13)


def test_the_progress_of_earlier_versions_is_read_when_no_checkpoint_exists(
    tmp_path: Path,
) -> None:
    (tmp_path / "timerProgress.json").write_text('{"low": 5, "done": [7, 9]}')
    checkpoint = TimerCheckpoint(tmp_path / "timerCheckpoint.bin")
    checkpoint.load(min_offset=0)
    assert [o for o in range(12) if checkpoint.done(o)] == [0, 1, 2, 3, 4, 7, 9]


def test_a_re_dispatched_timer_record_keeps_its_due_time_as_tags_code() -> None:
    """After a crash the store rebuilds consume-queue entries from the commit log: a timer
    record's entry must carry its due time again, not its tag's hash (it would fire at once)."""
    record = MessageExt(topic=TIMER_TOPIC, body=b"x", properties={"TIMER_OUT_MS": "5000"})
    assert timer_tags_code(record) == 5000
    older = MessageExt(topic=TIMER_TOPIC, body=b"x", properties={"TIMER_DELIVER_MS": "4000"})
    assert timer_tags_code(older) == 4000
    assert timer_tags_code(MessageExt(topic="Other", body=b"x")) is None


class _Host:
    """What the timer service reads of its broker to file timers: the store and its root."""

    def __init__(self, store: MessageStore, root: Path) -> None:
        self.store = store
        self.config = SimpleNamespace(store_path_root_dir=root)


def _timer(due_ms: int) -> MessageInner:
    props = {Prop.TIMER_OUT_MS: str(due_ms), Prop.REAL_TOPIC: "T", Prop.REAL_QID: "0"}
    return MessageInner(TIMER_TOPIC, TIMER_QUEUE, b"x", props, tags_code=due_ms)


def _filed(service: TimerService) -> list[tuple[int, int]]:
    return sorted((due, o) for due, slot in service.wheel.slots.items() for o in slot)


async def test_each_timer_is_filed_once_by_the_running_service_whatever_tells_of_it(
    tmp_path: Path,
) -> None:
    """The store tells of a batch once per distinct due time; a broker that does not deliver
    (a slave, a deposed master) files nothing; each start files the whole queue anew."""
    with MessageStore(small_config(tmp_path / "store")) as store:
        service = TimerService(cast("CoreHost", _Host(store, tmp_path)), clock=lambda: 1.0)
        store.add_arrival_listener(service.on_arrival)
        store.put_messages([_timer(5000), _timer(5000), _timer(7000)])  # as a slave hears them
        assert service.pending == 0
        service.start()
        assert _filed(service) == [(5000, 0), (5000, 1), (7000, 2)]
        store.put_messages([_timer(6000), _timer(6000), _timer(8000)])  # while running
        store.put_message(_timer(4000))
        running = [(4000, 6), (5000, 0), (5000, 1), (6000, 3), (6000, 4), (7000, 2), (8000, 5)]
        assert _filed(service) == running
        assert sum(service.enqueued.values()) == 4  # those it filed on arrival
        service.stop()  # deposed
        assert service.pending == 0
        store.put_message(_timer(9000))
        service.start()  # master again
        assert _filed(service) == [*running, (9000, 7)] and service.pending == 8
        service.stop()
