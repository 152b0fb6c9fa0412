"""The slave's side of replication: follow a master's commit log into the local store.

One connection at a time to the master's HA address: report the end of the local log, store
every frame that continues it (`MessageStore.append_replicated` dispatches queues and index
and wakes held pulls), report the new end after each read and every heartbeat interval.  A
frame that does not continue the log, a dead connection or `housekeeping_s` without a byte
from the master (RocketMQ's 20 s) ends the session; the next one starts after a short pause,
from whatever end the local log has, so nothing is skipped or stored twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import KW_ONLY, dataclass, field

from longboat.protocol import ProtocolError
from longboat.protocol.ha import FrameDecoder, encode_hello, encode_report
from longboat.remoting.tasks import BackgroundTask
from longboat.store import MessageStore, StoreUsageError

log = logging.getLogger(__name__)

RECONNECT_S = 1.0


@dataclass(eq=False, slots=True)
class HASlave:
    """One replication session at a time with the master at `master_ha_addr`, as above;
    `hello_id`: in controller mode, the broker id this slave names to its master."""

    store: MessageStore
    master_ha_addr: str = ""
    _: KW_ONLY
    heartbeat_s: float = 5.0
    housekeeping_s: float = 20.0
    hello_id: int | None = None
    connected: bool = field(default=False, init=False)
    # When the last frame (data or heartbeat) arrived, monotonic; 0 before any.
    last_frame_at: float = field(default=0.0, init=False)
    _task: BackgroundTask = field(default_factory=BackgroundTask, init=False)
    _address_changed: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    def update_master_address(self, addr: str | None) -> None:
        """Follow the master at `addr` (its HA address) from the next session on."""
        if addr and addr != self.master_ha_addr:
            log.info("replication: following the master at %s", addr)
            self.master_ha_addr = addr
            self._address_changed.set()

    def start(self) -> None:
        self._task.start(self._run(), "replication from the master")

    async def stop(self) -> None:
        await self._task.stop()

    async def _run(self) -> None:
        while True:
            addr = self.master_ha_addr
            if not addr:
                self._address_changed.clear()
                await self._address_changed.wait()
                continue
            try:
                await self._session(addr)
            except (OSError, ProtocolError, StoreUsageError, TimeoutError) as exc:
                log.warning("replication: session with the master at %s ended: %s", addr, exc)
            finally:
                self.connected = False
            await asyncio.sleep(RECONNECT_S)

    async def _session(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 5.0)
        try:
            self.connected = True
            self.last_frame_at = time.monotonic()
            store = self.store
            reported = store.max_physical_offset
            if self.hello_id is not None:
                writer.write(encode_hello(self.hello_id))
            writer.write(encode_report(reported))
            last_report = time.monotonic()
            decoder = FrameDecoder()
            while addr == self.master_ha_addr:
                # `asyncio.timeout`, not `wait_for`: on Python 3.11 `wait_for` returns the
                # read's data when a cancel lands as the read completes, so `stop()` (a role
                # switch to master) would wait on this loop for as long as the master talks.
                try:
                    async with asyncio.timeout(self.heartbeat_s):
                        data = await reader.read(1 << 20)
                except TimeoutError:
                    data = None
                else:
                    if not data:
                        raise ConnectionError("the master closed the connection")
                now = time.monotonic()
                if data is None and now - self.last_frame_at > self.housekeeping_s:
                    raise TimeoutError(f"nothing from the master for {self.housekeeping_s:.0f} s")
                for frame in decoder.feed(data or b""):
                    self.last_frame_at = now
                    if not frame.data:
                        continue
                    end = store.max_physical_offset
                    if end and frame.offset != end:
                        raise ProtocolError(
                            f"the master sent offset {frame.offset}, this log ends at {end}"
                        )
                    store.append_replicated(frame.offset, frame.data)
                end = store.max_physical_offset
                if end > reported or now - last_report >= self.heartbeat_s:
                    writer.write(encode_report(end))
                    await writer.drain()
                    reported, last_report = end, now
        finally:
            writer.close()
