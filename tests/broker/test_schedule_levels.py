"""The delay ladder and the schedule-topic rewrite (pure functions: no broker needed)."""

from __future__ import annotations

import pytest

from longboat.broker.delay_levels import (
    SCHEDULE_TOPIC,
    DelayLevels,
    delay_level_of,
    reroute_delayed,
)
from longboat.protocol.delay_ladder import DEFAULT_MESSAGE_DELAY_LEVEL
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.store import MessageInner


def test_default_ladder_is_rocketmqs_eighteen_levels() -> None:
    levels = DelayLevels.parse(DEFAULT_MESSAGE_DELAY_LEVEL)
    assert levels.max_level == 18
    assert levels.delay_ms(1) == 1000
    assert levels.delay_ms(3) == 10_000
    assert levels.delay_ms(5) == 60_000
    assert levels.delay_ms(18) == 2 * 3_600_000


def test_units_include_milliseconds_and_days() -> None:
    assert DelayLevels.parse("100ms 2s 3m 1h 1d").delays_ms == (
        100,
        2000,
        180_000,
        3_600_000,
        86_400_000,
    )


@pytest.mark.parametrize("bad", ["", "5", "1x", "s", "-1s", "1.5s", "10s abc"])
def test_bad_ladders_are_refused_naming_the_item(bad: str) -> None:
    with pytest.raises(ValueError, match="messageDelayLevel"):
        DelayLevels.parse(bad)


def test_levels_above_the_ladder_are_clamped() -> None:
    levels = DelayLevels.parse("1s 2s 3s")
    assert levels.clamp(99) == 3
    assert levels.queue_id(99) == 2
    assert levels.deliver_at(7, 1000) == 4000


@pytest.mark.parametrize(
    ("raw", "level"), [(None, 0), ("0", 0), ("-2", 0), ("junk", 0), ("3", 3), ("40", 40)]
)
def test_delay_property_as_level(raw: str | None, level: int) -> None:
    props = {} if raw is None else {Prop.DELAY: raw}
    assert delay_level_of(props) == level


def _msg(**props: str) -> MessageInner:
    return MessageInner(topic="T", queue_id=2, body=b"x", properties=dict(props))


def test_reroute_moves_a_delayed_message_to_its_level_queue() -> None:
    levels = DelayLevels.parse("1s 5s 10s")
    msg = _msg(DELAY="9", TAGS="a")
    assert reroute_delayed(msg, levels, now_ms=1_000)
    assert (msg.topic, msg.queue_id) == (SCHEDULE_TOPIC, 2)
    assert msg.tags_code == 11_000
    assert msg.properties == {
        "DELAY": "3",
        "TAGS": "a",
        "REAL_TOPIC": "T",
        "REAL_QID": "2",
    }


def test_reroute_leaves_undelayed_and_prepared_messages_alone() -> None:
    levels = DelayLevels.parse("1s")
    plain = _msg(TAGS="a")
    assert not reroute_delayed(plain, levels, now_ms=0)
    assert plain.topic == "T"
    half = _msg(DELAY="1")
    half.sys_flag = MessageSysFlag.TRANSACTION_PREPARED_TYPE
    assert not reroute_delayed(half, levels, now_ms=0)
    assert half.topic == "T"


def test_recovered_tags_code_is_the_delivery_time() -> None:
    levels = DelayLevels.parse("1s 5s")
    scheduled = MessageExt(topic=SCHEDULE_TOPIC, body=b"", queue_id=1, store_timestamp=100)
    assert levels.tags_code_of(scheduled) == 5100
    assert levels.tags_code_of(MessageExt(topic="T", body=b"")) is None
