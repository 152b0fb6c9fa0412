"""Timer messages through a controller-mode failover with real processes: timers a slave
replicated while they were pending fire once each on it after it became master, none before
its time, none twice, whether they share a due time or not; and the timers its master had
delivered already are not delivered again."""

from __future__ import annotations

import time
from pathlib import Path

from broker.wire import Wire, sent
from longboat.broker.services.timer_sync import SYNCED_FILE
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.remoting import RemotingClient
from longboat.store.json_file import read_json
from longboat.testing.failover import Member, ProcessCluster

from .support import eventually

TOPIC = "TimerFailover"
# Far enough ahead that the old master is killed before any is due.
PENDING_S = 12.0


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


def synced_done_before(slave: Member) -> int:
    """The time before which the slave counts every timer delivered by its master."""
    path = slave.directory / "store" / "config" / SYNCED_FILE
    return int((read_json(path) or {}).get("doneBeforeMs", 0))


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
        early = {b"early-%d" % i: now + 1000 for i in range(5)}  # delivered before the kill
        timers = {b"same-%d" % i: due_at for i in range(5)}  # one due time for five
        timers |= {b"apart-%d" % i: due_at + 300 * i for i in range(5)}
        assert first.master_address
        wire = Wire(first.master_address)
        try:
            # allAckInSyncStateSet: each answered send is on the slave too.
            for body, due in {**early, **timers}.items():
                await send_timer(wire, body, due)
        finally:
            await wire.close()
        before = await read_until(first.master_address, b"early-4")
        assert sorted(m.body for m in before) == sorted(early)
        master = cluster.master_of(first)
        [slave] = [b for b in cluster.brokers if b is not master]
        # The slave learned that its master delivered them (stored no earlier than due).
        delivered_at = max(m.store_timestamp for m in before)
        await eventually(lambda: synced_done_before(slave) > delivered_at)
        master.kill()
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
    assert sorted(bodies) == sorted([*early, *timers, b"control"])  # once each, none twice
    for m in got:
        if m.body in timers:
            assert m.store_timestamp >= timers[m.body], m.body  # none early
