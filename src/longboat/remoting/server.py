"""A remoting server: accept connections, route their requests, track them for shutdown.

Limits (`ConnectionLimits`), so one peer or many cannot exhaust the server:

* at most `max_connections` at once: a connection over the cap has each request answered
  SYSTEM_BUSY with a remark naming the limit and its setting, and is closed;
* a connection with no bytes read or written for `idle_timeout_s` is closed (Netty's
  `IdleStateHandler` with RocketMQ's `serverChannelMaxIdleTimeSeconds`, 120 s): each open
  connection holds a read buffer of up to one frame (16 MiB).  Clients heartbeat every 30 s,
  so only a silent or dead peer is cut.  Unlike RocketMQ's all-idle handler, a connection that
  owes the peer an answer (a pull or pop held for its suspend time, a request still being
  answered) is not idle, however quiet: cutting it would turn a long poll the client asked for
  into a transport error.  Its idle time counts from the answer.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from longboat.remoting.connection import Connection, RemotingProtocol
from longboat.remoting.router import Router
from longboat.remoting.tls import TLS_HANDSHAKE_BYTE, ServerTls, TlsMode

log = logging.getLogger(__name__)

# Connections over the cap kept open to answer their first request with the refusal.
REFUSED_WAITING = 64


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """How many connections a server keeps and how long an idle one lives; the setting
    names go into the remark or log line of each refusal, so an operator knows what to
    change."""

    max_connections: int = 10_000
    idle_timeout_s: float = 120.0
    max_connections_setting: str = "maxConnections"
    idle_timeout_setting: str = "serverChannelMaxIdleTimeSeconds"


class RemotingServer:
    def __init__(
        self,
        router: Router,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_frame: int = 16 * 1024 * 1024,
        on_connection_closed: Callable[[Connection], None] | None = None,
        expose_hint: str = "its listen address",
        limits: ConnectionLimits = ConnectionLimits(),
        tls: ServerTls = ServerTls(),
    ) -> None:
        """`expose_hint` names the setting that opens a loopback-only server to other hosts
        (said in the one line logged when it starts listening)."""
        self.router = router
        self.limits = limits
        self.tls = tls
        self._ssl = tls.context()  # raises on unusable certificate settings: fail at start
        # Permissive TLS: our own accept loop, which looks at each connection's first byte.
        self._listen_sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._idle_scanner: asyncio.Task[None] | None = None
        self._refused: set[Connection] = set()
        self._sniffing: set[asyncio.Task[None]] = set()
        self.expose_hint = expose_hint
        self.host = host
        self.port = port
        self.max_frame = max_frame
        self.connections: set[Connection] = set()
        self._on_connection_closed = on_connection_closed
        self._server: asyncio.base_events.Server | None = None

    def _closed(self, conn: Connection) -> None:
        self._refused.discard(conn)
        self.connections.discard(conn)
        if self._on_connection_closed is not None:
            self._on_connection_closed(conn)

    def _opened(self, conn: Connection) -> None:
        limits = self.limits
        if len(self.connections) >= limits.max_connections:
            conn.refusal = (
                f"the server holds {len(self.connections)} connections, its limit "
                f"(setting {limits.max_connections_setting}); try again later"
            )
            log.warning("connection from %s over the limit: %s", conn.peer, conn.refusal)
            # It lives only to answer its first request; a few at most wait for one.
            if len(self._refused) >= REFUSED_WAITING:
                conn.close()
            else:
                self._refused.add(conn)
            return
        self.connections.add(conn)

    def _make_protocol(self) -> RemotingProtocol:
        return RemotingProtocol(
            self.router,
            max_frame=self.max_frame,
            on_open=self._opened,
            on_close=self._closed,
        )

    async def _close_idle(self) -> None:
        timeout = self.limits.idle_timeout_s
        while True:
            await asyncio.sleep(min(10.0, timeout / 2))
            deadline = time.monotonic() - timeout
            idle = [
                c
                for c in (*self.connections, *self._refused)
                if c.last_active < deadline and not c.owes_answers
            ]
            for conn in idle:
                log.info(
                    "closing %s: idle for %.0f s (setting %s)",
                    conn.peer,
                    timeout,
                    self.limits.idle_timeout_setting,
                )
                conn.close()

    async def start(self, *, serving: bool = True) -> None:
        """Bind the port; with `serving=False` connections are refused until `serve()` (a
        server whose state depends on its port, like a broker's message ids, binds first)."""
        loop = asyncio.get_running_loop()
        if self.tls.mode is TlsMode.PERMISSIVE:
            sock = socket.create_server((self.host, self.port), reuse_port=False, backlog=1024)
            sock.setblocking(False)
            self._listen_sock = sock
            self.port = sock.getsockname()[1]
        else:
            self._server = await loop.create_server(
                self._make_protocol,
                self.host,
                self.port,
                reuse_address=True,
                start_serving=serving,
                ssl=self._ssl,
            )
            self.port = self._server.sockets[0].getsockname()[1]
        self._idle_scanner = asyncio.ensure_future(self._close_idle())
        if serving:
            await self.serve()

    async def serve(self) -> None:
        """Start accepting connections on a port bound with `start(serving=False)`."""
        if self._listen_sock is not None:
            self._accepting = asyncio.ensure_future(self._accept(self._listen_sock))
        else:
            assert self._server is not None, "serve() before start()"
            await self._server.start_serving()
        self._log_listening()

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            sock, _ = await loop.sock_accept(listening)
            task = asyncio.ensure_future(self._sniff(sock))
            self._sniffing.add(task)
            task.add_done_callback(self._sniffing.discard)

    async def _sniff(self, sock: socket.socket) -> None:
        """Serve one accepted socket as TLS or plain, by its first byte (permissive mode)."""
        loop = asyncio.get_running_loop()
        readable: asyncio.Future[None] = loop.create_future()

        def ready() -> None:
            if not readable.done():
                readable.set_result(None)

        loop.add_reader(sock.fileno(), ready)
        try:
            async with asyncio.timeout(self.limits.idle_timeout_s):
                await readable
            first = sock.recv(1, socket.MSG_PEEK)
        except (TimeoutError, OSError):
            sock.close()
            return
        finally:
            loop.remove_reader(sock.fileno())
        if not first:
            sock.close()
            return
        tls = self._ssl if first[0] == TLS_HANDSHAKE_BYTE else None
        try:
            await loop.connect_accepted_socket(self._make_protocol, sock, ssl=tls)
        except (OSError, ssl.SSLError) as exc:
            log.info("connection failed before it started: %s", exc)
            sock.close()

    def _log_listening(self) -> None:
        if is_loopback(self.host):
            log.info(
                "%s listening on %s:%s only: other hosts cannot connect (set %s to expose "
                "it; see docs/security.md)",
                self.router.name,
                self.host,
                self.port,
                self.expose_hint,
            )
        else:
            log.info("%s listening on %s:%s", self.router.name, self.host, self.port)

    def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._accepting is not None:
            self._accepting.cancel()
            self._accepting = None
        for task in list(self._sniffing):
            task.cancel()
        if self._listen_sock is not None:
            self._listen_sock.close()
            self._listen_sock = None

    async def close(self) -> None:
        self.stop_accepting()
        if self._idle_scanner is not None:
            self._idle_scanner.cancel()
            await asyncio.gather(self._idle_scanner, return_exceptions=True)
            self._idle_scanner = None
        for conn in [*self.connections, *self._refused]:
            conn.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
