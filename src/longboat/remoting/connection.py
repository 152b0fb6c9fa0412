"""One remoting connection over asyncio: requests and responses in both directions.

`RemotingProtocol` owns a sans-IO `FrameDecoder`; every whole command is either a response
(flag bit 0), matched by opaque to a waiting future, or a request handed to the connection's
`RequestHandler` (the `Router`, in every server and client here).  The handler answers at once
or returns the task still answering; one-way requests are never answered.  A protocol error
closes only this connection; a whole frame with an unreadable header is answered with
SYSTEM_ERROR when it says who asked, and reading goes on.

Back-pressure: when the peer stops reading our answers (the transport's write buffer passes
its high-water mark) or too many of its requests are still being answered, we stop reading its
requests, so a slow or hostile peer costs bounded memory.  The connection counts those
requests itself, from the tasks its handler returns: the handler knows nothing of it.

Writes: the answers given while one read's requests are dispatched are held back and written
together when the read is done (or once they pass `CORK_LIMIT`, so back-pressure still acts in
a long read): a client pipelining four pulls costs one system call, not four.  Anything sent
outside a read (a held pull's answer, a task's answer, a request) is written at once.

The connection depends on the `RequestHandler` protocol, never on the router's module, so the
import graph runs one way: router → connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol, cast

from longboat.protocol import (
    FrameDecoder,
    MalformedHeader,
    ProtocolError,
    RemotingCommand,
    ResponseCode,
    encode_parts,
)
from longboat.protocol.command import OpaqueCounter
from longboat.remoting.errors import ConnectionClosed, RequestTimeout

# Adds credentials to an outgoing request (the ACL signature); see protocol.acl_signature.
Signer = Callable[[RemotingCommand], None]

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 1024
WRITE_HIGH_WATER = 8 * 1024 * 1024
# Answers held back while one read's requests are dispatched are written once they pass this,
# so back-pressure still pauses a peer in the middle of a long read.
CORK_LIMIT = 64 * 1024


class RequestHandler(Protocol):
    """What a connection hands each incoming request to."""

    def handle(self, conn: Connection, cmd: RemotingCommand) -> asyncio.Future[None] | None:
        """Answer `cmd` (or not, if one-way) on `conn`.  Returns None when done, or the task
        still answering it, which the connection counts as in flight until it finishes."""
        ...


class RemotingProtocol(asyncio.Protocol):
    """asyncio protocol for one connection; `conn` is what the rest of the code uses."""

    def __init__(
        self,
        handler: RequestHandler | None,
        *,
        max_frame: int = 16 * 1024 * 1024,
        on_open: Callable[[Connection], None] | None = None,
        on_close: Callable[[Connection], None] | None = None,
        signer: Signer | None = None,
    ) -> None:
        """`signer` adds credentials to each request this side sends (ACL's signature)."""
        self.handler = handler
        self.signer = signer
        self.decoder = FrameDecoder(max_frame)
        self.conn: Connection | None = None
        self._on_open = on_open
        self._on_close = on_close

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not an asyncio.Transport subclass, so no isinstance).
        transport = cast(asyncio.Transport, transport)
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self.conn = Connection(transport, self.handler, on_resume=self.process_buffered)
        self.conn.signer = self.signer
        if self._on_close is not None:
            self.conn.add_close_callback(self._on_close)
        if self._on_open is not None:
            self._on_open(self.conn)

    def data_received(self, data: bytes) -> None:
        assert self.conn is not None
        self.conn.last_active = time.monotonic()
        try:
            self.decoder.feed(data)
        except ProtocolError as exc:
            self._refuse(exc)
            return
        self.process_buffered()

    def process_buffered(self) -> None:
        """Dispatch the whole commands received, until there are none or the connection paused
        reading: one read can carry hundreds of requests, and answering them all would
        overshoot the bounds that paused it.  The rest waits here for `resume`."""
        conn = self.conn
        assert conn is not None
        decoder = self.decoder
        conn.cork()
        try:
            while not conn.reading_paused:
                try:
                    cmd = decoder.next_command()
                except MalformedHeader as exc:
                    if not conn.refuse_malformed(exc):
                        raise
                    continue
                if cmd is None:
                    break
                conn.dispatch(cmd)
        except ProtocolError as exc:
            self._refuse(exc)
        finally:
            conn.uncork()

    def _refuse(self, exc: ProtocolError) -> None:
        assert self.conn is not None
        # Requests waiting for an answer fail with `exc`, which tells their caller; a
        # connection nobody waits on is worth a warning.
        level = logging.DEBUG if self.conn.awaiting_answers else logging.WARNING
        log.log(level, "closing connection from %s: %s", self.conn.peer, exc)
        self.conn.close(reason=exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.conn.connection_lost()

    def pause_writing(self) -> None:
        if self.conn is not None:
            self.conn.set_write_paused(True)

    def resume_writing(self) -> None:
        if self.conn is not None:
            self.conn.set_write_paused(False)


class Connection:
    """A live connection: send requests and await answers, write responses, close."""

    def __init__(
        self,
        transport: asyncio.Transport,
        handler: RequestHandler | None,
        *,
        on_resume: Callable[[], None] | None = None,
    ) -> None:
        """`handler` answers the peer's requests; None: requests are ignored (a connection
        that only sends requests).  `on_resume` runs (soon, not in-line) when reading resumes
        after back-pressure: the commands already received go first."""
        self.transport = transport
        self.handler = handler
        self._on_resume = on_resume
        self._bad_requests = 0
        self.signer: Signer | None = None
        # Monotonic time of the last bytes read or written (a server closes idle connections).
        self.last_active = time.monotonic()
        # Opaques of the peer's requests not answered yet (a held pull, a long request): a
        # server does not close a connection that still owes one its answer.
        self._unanswered: set[int] = set()
        # Set by a server over its connection cap: every request is answered SYSTEM_BUSY with
        # this remark, and the connection closed.
        self.refusal: str | None = None
        peer = transport.get_extra_info("peername")
        self.peer_host: str = peer[0] if peer else "?"
        self.peer_port: int = peer[1] if peer else 0
        self.peer = f"{self.peer_host}:{self.peer_port}"
        self.closed = False
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaque = OpaqueCounter()
        self._close_callbacks: list[Callable[[Connection], None]] = []
        self._in_flight = 0
        self._write_paused = False
        self._reading_paused = False
        self._closed_event = asyncio.Event()
        # Writes held back by `cork` (None: not corked), and their size.
        self._corked: list[bytes] | None = None
        self._corked_size = 0
        # Free-form per-connection state for the layers above (e.g. the client id).
        self.attributes: dict[str, object] = {}

    # ------------------------------------------------------------------ incoming

    def dispatch(self, cmd: RemotingCommand) -> None:
        if cmd.is_response:
            fut = self._pending.pop(cmd.opaque, None)
            if fut is None:
                log.debug("dropping unmatched response opaque=%s from %s", cmd.opaque, self.peer)
            elif not fut.done():
                fut.set_result(cmd)
            return
        if self.handler is None:
            return
        if self.refusal is not None:
            if not cmd.is_oneway:
                self.send(cmd.make_response(ResponseCode.SYSTEM_BUSY, self.refusal))
            self.close()
            return
        if not cmd.is_oneway:
            self._unanswered.add(cmd.opaque)
        answering = self.handler.handle(self, cmd)
        if answering is not None:
            self._in_flight += 1
            if self._in_flight >= MAX_IN_FLIGHT:
                self._update_reading()
            answering.add_done_callback(self._answered)

    def refuse_malformed(self, exc: MalformedHeader) -> bool:
        """Answer a request whose header could not be read with SYSTEM_ERROR (nothing for a
        one-way request); False when it cannot be answered and the connection must close."""
        request = exc.request
        if request is None or request.is_response or self.handler is None:
            return False
        self.log_bad_request(request.code, exc)
        if not request.is_oneway:
            self.send(
                request.make_response(
                    ResponseCode.SYSTEM_ERROR,
                    f"malformed request header: {exc} (the sender's error)",
                )
            )
        return True

    def log_bad_request(self, code: int, problem: Exception) -> None:
        """The peer's first bad request is logged at INFO, the rest at DEBUG: a peer sending
        garbage in a loop must not flood the log (and the disk under it)."""
        self._bad_requests += 1
        level = logging.INFO if self._bad_requests == 1 else logging.DEBUG
        log.log(level, "bad request code %s from %s: %s", code, self.peer, problem)

    def _answered(self, _: asyncio.Future[None]) -> None:
        self._in_flight -= 1
        if self._reading_paused:
            self._update_reading()

    def set_write_paused(self, paused: bool) -> None:
        self._write_paused = paused
        self._update_reading()

    def _update_reading(self) -> None:
        should_pause = self._write_paused or self._in_flight >= MAX_IN_FLIGHT
        if should_pause == self._reading_paused or self.closed:
            return
        self._reading_paused = should_pause
        if should_pause:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()
            if self._on_resume is not None:
                asyncio.get_running_loop().call_soon(self._on_resume)

    @property
    def reading_paused(self) -> bool:
        """Back-pressure holds this peer's requests (or the connection is closed)."""
        return self._reading_paused or self.closed

    # ------------------------------------------------------------------ outgoing

    def send(self, cmd: RemotingCommand) -> None:
        """Write one command (typically a response); silently dropped once closed."""
        if self.closed:
            return
        self.last_active = time.monotonic()
        if cmd.is_response:
            self._unanswered.discard(cmd.opaque)
        head, body = encode_parts(cmd)
        corked = self._corked
        if corked is not None:
            corked.append(head)
            if body:
                corked.append(body)
            self._corked_size += len(head) + len(body)
            if self._corked_size >= CORK_LIMIT:
                self._write_corked()
        elif body:
            self.transport.writelines((head, body))
        else:
            self.transport.write(head)

    def cork(self) -> None:
        """Hold this connection's writes back until `uncork`: the answers to the requests of
        one read leave in one write (a pipelining client, four pulls in one read, costs one
        system call instead of four), and none waits longer than that read's dispatch."""
        if self._corked is None:
            self._corked = []
            self._corked_size = 0

    def uncork(self) -> None:
        self._write_corked()
        self._corked = None

    def _write_corked(self) -> None:
        corked = self._corked
        if corked:
            if not self.closed:
                self.transport.writelines(corked)
            self._corked = []
            self._corked_size = 0

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request and wait for its response."""
        if self.closed:
            raise ConnectionClosed(f"connection to {self.peer} is closed")
        cmd.opaque = self._opaque.next()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        self._pending[cmd.opaque] = fut
        if self.signer is not None:
            self.signer(cmd)
        self.send(cmd)
        # A timer that fails the future, not asyncio.timeout or wait_for around the await:
        # awaiting the future itself keeps a cancellation of the caller a cancellation (3.11's
        # wait_for can swallow one that lands as the answer arrives), and one timer handle
        # per request is a fraction of a timeout context's cost on a path taken per message.
        timer = loop.call_later(timeout, self._expire, fut, cmd.code, timeout)
        try:
            return await fut
        finally:
            timer.cancel()
            self._pending.pop(cmd.opaque, None)

    def _expire(self, fut: asyncio.Future[RemotingCommand], code: int, timeout: float) -> None:
        if not fut.done():
            fut.set_exception(
                RequestTimeout(
                    f"no response from {self.peer} to request code {code} within {timeout:.1f}s"
                )
            )

    def oneway(self, cmd: RemotingCommand) -> None:
        """Send a one-way request: no answer is expected."""
        if self.closed:
            raise ConnectionClosed(f"connection to {self.peer} is closed")
        cmd.opaque = self._opaque.next()
        cmd.flag |= 0x2
        if self.signer is not None:
            self.signer(cmd)
        self.send(cmd)

    # ------------------------------------------------------------------ closing

    @property
    def awaiting_answers(self) -> bool:
        """Requests sent on this connection still wait for their answer."""
        return bool(self._pending)

    @property
    def owes_answers(self) -> bool:
        """Requests the peer sent on this connection are not answered yet (held, or still
        being answered)."""
        return bool(self._unanswered)

    def add_close_callback(self, callback: Callable[[Connection], None]) -> None:
        self._close_callbacks.append(callback)

    def close(self, reason: Exception | None = None) -> None:
        """Close; requests waiting for an answer fail, with `reason` (what the peer sent that
        made us close) in their error."""
        if not self.closed:
            self._write_corked()  # a refusal's answer goes before the close
            self.transport.close()
            self.connection_lost(reason)

    def abort(self) -> None:
        """Close at once, dropping unsent data (tests use it to simulate a crash)."""
        self.transport.abort()
        self.connection_lost()

    def connection_lost(self, reason: Exception | None = None) -> None:
        if self.closed:
            return
        self.closed = True
        why = f": {reason}" if reason is not None else ""
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionClosed(f"connection to {self.peer} closed{why}"))
        self._pending.clear()
        self._closed_event.set()
        for callback in self._close_callbacks:
            try:
                callback(self)
            except Exception:
                log.exception("close callback failed for %s", self.peer)

    async def wait_closed(self) -> None:
        await self._closed_event.wait()
