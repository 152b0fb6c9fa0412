"""Timer messages through a controller-mode failover with real processes: timers a slave
replicated while they were pending fire once each on it after it became master, none before
its time, none twice, whether they share a due time or not."""

from __future__ import annotations

import time
from pathlib import Path

from broker.wire import Wire, sent
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.remoting import RemotingClient
from longboat.testing.failover import ProcessCluster

TOPIC = "TimerFailover"
# Far enough ahead that the old master is killed before any is due.
PENDING_S = 10.0


async def send_timer(wire: Wire, body: bytes, due_ms: int) -> None:
    props = {Prop.TIMER_DELIVER_MS: str(due_ms), Prop.UNIQ_KEY: body.hex().upper()}
    assert sent(await wire.send(TOPIC, body, props=props)).recallHandle


async def read_until(addr: str, last: bytes) -> list[MessageExt]:
    """Every message of queue 0 on the broker at `addr`, until `last` is among them."""
    wire = Wire(addr)
    try:
        return await wire.pull_until(TOPIC, last, group="timer-failover", timeout_s=60)
    finally:
        await wire.close()


async def test_timers_pending_at_a_failover_fire_once_each_on_the_new_master_none_early(
    tmp_path: Path,
) -> None:
    cluster = ProcessCluster.build(tmp_path, controllers=1, brokers=2)
    cluster.start()
    client = RemotingClient()
    try:
        first = await cluster.wait_for(client, in_sync=2)
        now = int(time.time() * 1000)
        due_at = now + int(PENDING_S * 1000)
        timers = {b"same-%d" % i: due_at for i in range(5)}  # one due time for five
        timers |= {b"apart-%d" % i: due_at + 300 * i for i in range(5)}
        assert first.master_address
        wire = Wire(first.master_address)
        try:
            # allAckInSyncStateSet: each answered send is on the slave too.
            for body, due in timers.items():
                await send_timer(wire, body, due)
        finally:
            await wire.close()
        cluster.master_of(first).kill()
        assert int(time.time() * 1000) < due_at, "the master was killed after the timers' time"
        second = await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
        assert second.master_address
        wire = Wire(second.master_address)
        try:
            # The positive signal: a timer sent to the new master, due after every other.
            control_due = max(max(timers.values()), int(time.time() * 1000)) + 1000
            await send_timer(wire, b"control", control_due)
        finally:
            await wire.close()
        got = await read_until(second.master_address, b"control")
    finally:
        await client.close()
        cluster.stop()
    bodies = [m.body for m in got]
    assert sorted(bodies) == sorted([*timers, b"control"])  # once each, none twice
    for m in got:
        if m.body in timers:
            assert m.store_timestamp >= timers[m.body], m.body  # none early
