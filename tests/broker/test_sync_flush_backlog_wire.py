"""`maxPendingSyncFlushes` over the wire: under SYNC_FLUSH, with the disk made slow (every sync
held until the test releases it), sends beyond the setting's number of appends waiting for an
fsync are answered SYSTEM_BUSY at once and stored nowhere; the waiting ones are answered
SEND_OK once the disk catches up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from conftest import Cluster
from longboat.protocol import ResponseCode

from .wire import Wire


def test_sends_past_the_pending_sync_flushes_are_refused_busy(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(flush_disk_type="SYNC_FLUSH", max_pending_sync_flushes=2)
    broker = cluster.broker
    disk = threading.Event()

    def slow_disk(seconds: float) -> None:
        disk.wait(30)  # each sync's result waits for the test to release it

    broker.store.observe_flushes(slow_disk)

    async def scenario() -> None:
        wires = [Wire(cluster.broker_addr) for _ in range(3)]
        try:
            waiting = [asyncio.ensure_future(w.send("Backlog", b"waits")) for w in wires[:2]]
            async with asyncio.timeout(10):
                while not broker.appender.flush_backlog_full:
                    await asyncio.sleep(0.01)
            busy = await wires[2].send("Backlog", b"refused")
            assert busy.code == ResponseCode.SYSTEM_BUSY, busy.remark
            assert broker.store.max_offset("Backlog", 0) == 2  # the refused one is not stored
            disk.set()
            assert [(await w).code for w in waiting] == [ResponseCode.SUCCESS] * 2
        finally:
            disk.set()
            for w in wires:
                await w.close()

    try:
        cluster.runner.run(scenario())
    finally:
        broker.store.observe_flushes(None)
