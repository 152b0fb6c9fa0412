"""A remoting server: accept connections, route their requests, track them for shutdown."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Callable

from longboat.remoting.connection import Connection, RemotingProtocol
from longboat.remoting.router import Router

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


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
    ) -> None:
        """`expose_hint` names the setting that opens a loopback-only server to other hosts
        (said in the one line logged when it starts listening)."""
        self.router = router
        self.expose_hint = expose_hint
        self.host = host
        self.port = port
        self.max_frame = max_frame
        self.connections: set[Connection] = set()
        self._on_connection_closed = on_connection_closed
        self._server: asyncio.base_events.Server | None = None

    def _closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        if self._on_connection_closed is not None:
            self._on_connection_closed(conn)

    def _make_protocol(self) -> RemotingProtocol:
        return RemotingProtocol(
            self.router,
            max_frame=self.max_frame,
            on_open=self.connections.add,
            on_close=self._closed,
        )

    async def start(self, *, serving: bool = True) -> None:
        """Bind the port; with `serving=False` connections are refused until `serve()` (a
        server whose state depends on its port, like a broker's message ids, binds first)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._make_protocol, self.host, self.port, reuse_address=True, start_serving=serving
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if serving:
            self._log_listening()

    async def serve(self) -> None:
        """Start accepting connections on a port bound with `start(serving=False)`."""
        assert self._server is not None, "serve() before start()"
        await self._server.start_serving()
        self._log_listening()

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

    async def close(self) -> None:
        self.stop_accepting()
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
