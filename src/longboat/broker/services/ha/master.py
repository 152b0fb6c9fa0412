"""The master's side of replication: one HA server, one stream per connected slave.

Per slave, a reader takes its reports (the end of its log: where to start, then how far it
has stored) and a writer streams commit-log bytes from there, a frame of at most
`batch_size` bytes within one commit-log file at a time, woken by every append
(`on_append`) and sending a heartbeat frame when there is nothing to send for
`heartbeat_s`.  A slave that reports 0 gets the master's last commit-log file onwards, as
RocketMQ does: a new slave does not copy the whole history.

A SYNC_MASTER's send waits in `wait_replicated` until some slave has acknowledged the
send's end offset; `slave_ok` is RocketMQ's test of whether waiting is worth it (a slave is
connected and not more than `fall_behind_max` bytes behind).  In controller mode
(`expect_hello`) each slave first names its broker id, and a send can wait for every member
of the SyncStateSet instead (`wait_replicated(..., ids=...)`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import KW_ONLY, dataclass, field

from longboat.protocol import ProtocolError
from longboat.protocol.ha import HELLO_SIZE, ReportDecoder, decode_hello, encode_frame_header
from longboat.store import MessageStore

log = logging.getLogger(__name__)


@dataclass(eq=False)
class SlaveStream:
    """One connected slave, as the master sees it."""

    peer: str
    writer: asyncio.StreamWriter
    ack_offset: int = -1  # the end of its log as it last reported; -1 before the first report
    grown: asyncio.Event = field(default_factory=asyncio.Event)
    reported: asyncio.Event = field(default_factory=asyncio.Event)
    broker_id: int | None = None  # from its hello, in controller mode


@dataclass(eq=False, slots=True)
class HAMaster:
    """Serves the slaves that connect to `host:port` (0: any free port; after `start`, the
    bound one); `fall_behind_max` is the most a slave may lag for a SYNC_MASTER send to wait
    for it (haSlaveFallbehindMax); `expect_hello`: controller mode, each slave first names its
    broker id."""

    store: MessageStore
    _: KW_ONLY
    host: str
    port: int
    heartbeat_s: float = 5.0
    batch_size: int = 32 * 1024
    fall_behind_max: int
    expect_hello: bool = False
    slaves: dict[SlaveStream, None] = field(default_factory=dict, init=False)
    _server: asyncio.Server | None = field(default=None, init=False)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set, init=False)
    _waiters: list[tuple[int, frozenset[int] | None, asyncio.Future[None]]] = field(
        default_factory=list, init=False
    )
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _loop_thread: int = field(default=0, init=False)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.store.observe_appends(self.on_append)
        log.info("replication: serving slaves on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        # Closing the connections ends each slave's session; cancelling its task instead
        # would trip asyncio's stream callback on 3.11 (it reads a cancelled task's exception).
        for slave in list(self.slaves):
            slave.writer.close()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        for _, _, fut in self._waiters:
            if not fut.done():
                fut.cancel()
        self._waiters.clear()

    # ------------------------------------------------------------------ figures

    @property
    def replicated_offset(self) -> int:
        """The furthest any slave has acknowledged (RocketMQ's push2SlaveMaxOffset)."""
        return max((s.ack_offset for s in self.slaves), default=-1)

    def acked_by(self, ids: frozenset[int] | None) -> int:
        """How far every slave of `ids` has acknowledged (-1 while one is not connected);
        with None, how far any slave has."""
        if ids is None:
            return self.replicated_offset
        acks = {s.broker_id: s.ack_offset for s in self.slaves if s.broker_id in ids}
        if len(acks) < len(ids):
            return -1
        return min(acks.values(), default=-1)

    def slave_ok(self, offset: int) -> bool:
        """A slave is connected and close enough that a SYNC_MASTER send should wait for it."""
        if not self.slaves:
            return False
        return offset - max(self.replicated_offset, 0) < self.fall_behind_max

    # ------------------------------------------------------------------ SYNC_MASTER

    async def wait_replicated(
        self, offset: int, timeout: float, *, ids: frozenset[int] | None = None
    ) -> bool:
        """True once a slave (with `ids`, each of those slaves) has acknowledged everything
        below `offset`, False after `timeout` seconds."""
        if not ids and ids is not None:
            return True
        if self.acked_by(ids) >= offset:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (offset, ids, fut)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    def _acknowledged(self) -> None:
        still: list[tuple[int, frozenset[int] | None, asyncio.Future[None]]] = []
        for offset, ids, fut in self._waiters:
            if offset <= self.acked_by(ids):
                if not fut.done():
                    fut.set_result(None)
            else:
                still.append((offset, ids, fut))
        self._waiters = still

    # ------------------------------------------------------------------ streaming

    def on_append(self, end: int) -> None:
        """Store observer: the log grew; wake every slave's writer."""
        if self._loop is None:
            return
        if threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self.on_append, end)
            return
        for slave in self.slaves:
            slave.grown.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        slave = SlaveStream(f"{peer[0]}:{peer[1]}" if peer else "?", writer)
        self.slaves[slave] = None
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        log.info("replication: slave %s connected", slave.peer)
        streaming = asyncio.ensure_future(self._stream(slave, writer))
        try:
            if self.expect_hello:
                slave.broker_id = decode_hello(await reader.readexactly(HELLO_SIZE))
                log.info("replication: slave %s is broker %d", slave.peer, slave.broker_id)
            await self._read_reports(slave, reader)
        except (ConnectionError, ProtocolError, asyncio.IncompleteReadError) as exc:
            log.warning("replication: slave %s: %s", slave.peer, exc)
        finally:
            streaming.cancel()
            await asyncio.gather(streaming, return_exceptions=True)
            del self.slaves[slave]
            self._tasks.discard(task)
            writer.close()
            log.info("replication: slave %s disconnected", slave.peer)

    async def _read_reports(self, slave: SlaveStream, reader: asyncio.StreamReader) -> None:
        decoder = ReportDecoder()
        while data := await reader.read(65536):
            offset = decoder.feed(data)
            if offset is not None:
                slave.ack_offset = offset
                slave.reported.set()
                self._acknowledged()

    async def _stream(self, slave: SlaveStream, writer: asyncio.StreamWriter) -> None:
        try:
            await slave.reported.wait()
            offset = self._start_offset(slave.ack_offset)
            log.info("replication: streaming to %s from offset %d", slave.peer, offset)
            while True:
                slave.grown.clear()
                data = self.store.commit_log_data(offset, self.batch_size)
                if data:
                    writer.write(encode_frame_header(offset, len(data)))
                    writer.write(data)
                    offset += len(data)
                    await writer.drain()
                    continue
                try:
                    await asyncio.wait_for(slave.grown.wait(), self.heartbeat_s)
                except TimeoutError:
                    writer.write(encode_frame_header(offset, 0))
                    await writer.drain()
        except ConnectionError as exc:
            log.warning("replication: streaming to %s stopped: %s", slave.peer, exc)
            writer.close()

    def _start_offset(self, reported: int) -> int:
        """Where to start: the slave's end, or for a new slave the start of the master's last
        commit-log file (RocketMQ's rule)."""
        if reported:
            return reported
        end = self.store.max_physical_offset
        segment = self.store.config.commit_log_segment_size
        return max(end - end % segment, self.store.min_physical_offset)
