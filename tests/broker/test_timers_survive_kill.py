"""Timer messages through a SIGKILL of a real broker process (`longboat broker`): every timer
the broker accepted fires once after the restart, none before its time, a recalled one never,
and the ones delivered before the kill are not delivered again."""

from __future__ import annotations

import time

from broker.test_replication_faults import (  # and `group`, its fixture of a broker group
    BrokerGroup,
    create_topic,
    group,  # noqa: F401
)
from broker.wire import Wire, sent
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.headers import RecallMessageRequestHeader
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop

TOPIC = "TimerKill"


async def send_timer(wire: Wire, body: bytes, due_ms: int) -> str:
    props = {Prop.TIMER_DELIVER_MS: str(due_ms), Prop.UNIQ_KEY: body.hex().upper()}
    handle = sent(await wire.send(TOPIC, body, props=props)).recallHandle
    assert handle
    return handle


async def read_until(wire: Wire, last: bytes) -> list[MessageExt]:
    return await wire.pull_until(TOPIC, last, group="timer-kill")


async def test_accepted_timers_fire_once_after_a_kill_none_early_none_recalled(
    group: BrokerGroup,  # noqa: F811
) -> None:
    master = group.start("master", "ASYNC_MASTER")
    await create_topic(group.namesrv, TOPIC)
    now = int(time.time() * 1000)
    early = {b"early-%d" % i: now + 1000 for i in range(10)}
    late = {b"late-%d" % i: now + 5000 + 100 * i for i in range(10)}
    wire = Wire(master)
    try:
        for body, due in {**early, **late}.items():
            await send_timer(wire, body, due)
        recalled = await send_timer(wire, b"recalled", now + 5000)
        header = RecallMessageRequestHeader(topic=TOPIC, recallHandle=recalled)
        answer = await wire.call(RequestCode.RECALL_MESSAGE, header)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        before = await read_until(wire, b"early-9")
    finally:
        await wire.close()
    assert {m.body for m in before} == set(early)
    group.kill("master")

    master = group.start("master", "ASYNC_MASTER")
    wire = Wire(master)
    try:
        # The positive signal: a timer sent after the restart, due after every other.
        await send_timer(wire, b"control", int(time.time() * 1000) + 1000 + 5000)
        got = await read_until(wire, b"control")
    finally:
        await wire.close()
    bodies = [m.body for m in got]
    assert sorted(bodies) == sorted([*early, *late, b"control"])  # once each, none recalled
    timers = {**early, **late}
    for m in got:
        if m.body in timers:  # stored in its topic no earlier than due
            assert m.store_timestamp >= timers[m.body], m.body
