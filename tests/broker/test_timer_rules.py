"""The send-side timer rules of `core/timers.py` as a table, with no broker: the grain a
`timerPrecisionMs` setting becomes (RocketMQ's MessageStoreConfig.setTimerPrecisionMs), the
due time a timer is filed at (rounded up to the grain: never early, and when RocketMQ's wheel
reads the slot it files the timer in), and the `timerMaxDelaySec` refusal."""

from __future__ import annotations

import pytest

from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.core.timers import (
    TIMER_TOPIC,
    illegal_timer_remark,
    reroute_timer,
    timer_precision,
)
from longboat.protocol.properties import Prop
from longboat.store import MessageInner

NOW = 1_700_000_000_000  # a multiple of every grain


@pytest.mark.parametrize(
    ("setting", "grain"),
    [(1, 100), (100, 100), (199, 100), (200, 200), (499, 200), (500, 500), (999, 500),
     (1000, 1000), (2000, 1000), (60_000, 1000)],
)  # fmt: skip
def test_a_precision_setting_becomes_one_of_rocketmq_s_grains(setting: int, grain: int) -> None:
    assert timer_precision(setting) == grain


def _timer(deliver_ms: int) -> MessageInner:
    return MessageInner("T", 3, b"b", {Prop.TIMER_DELIVER_MS: str(deliver_ms)})


@pytest.mark.parametrize(
    ("setting", "deliver", "due"),
    [
        (1000, NOW + 1, NOW + 1000),  # just past a grain: the next one
        (1000, NOW + 1000, NOW + 1000),  # on a grain: that grain
        (500, NOW + 501, NOW + 1000),
        (200, NOW + 1999, NOW + 2000),
        (2000, NOW + 1001, NOW + 2000),  # 2 s is taken as 1 s, as RocketMQ takes it
    ],
)
def test_a_timer_is_due_at_its_time_rounded_up_to_the_grain(
    setting: int, deliver: int, due: int
) -> None:
    msg = _timer(deliver)
    assert reroute_timer(msg, NOW, setting, max_delay_sec=3600)
    assert (msg.topic, msg.queue_id, msg.tags_code) == (TIMER_TOPIC, 0, due)
    assert msg.properties[Prop.TIMER_OUT_MS] == str(due)
    assert (msg.properties[Prop.REAL_TOPIC], msg.properties[Prop.REAL_QID]) == ("T", "3")


def test_a_timer_beyond_the_longest_delay_is_refused_and_one_at_it_is_not() -> None:
    with pytest.raises(Refusal) as refused:
        reroute_timer(_timer(NOW + 10_001), NOW, 1000, max_delay_sec=10)
    assert refused.value.reason is Reason.ILLEGAL_DELIVERY_TIME
    assert refused.value.remark == illegal_timer_remark(10_000)
    assert reroute_timer(_timer(NOW + 10_000), NOW, 1000, max_delay_sec=10)
