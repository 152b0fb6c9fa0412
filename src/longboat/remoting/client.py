"""Outgoing connections, one per address, shared by every request to that address.

Requests from a broker to us (NOTIFY_CONSUMER_IDS_CHANGED and friends) arrive on the same
sockets and go to the `RequestHandler` given here (a `Router`).
"""

from __future__ import annotations

import asyncio
import socket
import ssl

from longboat.protocol import RemotingCommand
from longboat.remoting.connection import Connection, RemotingProtocol, RequestHandler, Signer
from longboat.remoting.errors import ConnectError, ConnectionClosed


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"not a host:port address: {addr!r}")
    return host.strip("[]"), int(port)


class RemotingClient:
    def __init__(
        self,
        router: RequestHandler | None = None,
        *,
        connect_timeout: float = 3.0,
        signer: Signer | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """`signer` adds credentials to every request sent on these connections (ACL);
        `tls` makes every connection TLS (see `remoting.tls.client_context`)."""
        self.router = router
        self.signer = signer
        self.tls = tls
        self.connect_timeout = connect_timeout
        self._conns: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Future[Connection]] = {}
        self._closed = False

    async def connection(self, addr: str) -> Connection:
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        pending = self._connecting.get(addr)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        self._connecting[addr] = fut
        try:
            conn = await self._connect(addr)
            self._conns[addr] = conn
            fut.set_result(conn)
            return conn
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved
            raise
        finally:
            self._connecting.pop(addr, None)

    async def _connect(self, addr: str) -> Connection:
        if self._closed:
            raise ConnectionClosed("client is closed")
        host, port = split_addr(addr)
        loop = asyncio.get_running_loop()
        try:
            # Not wait_for: it can swallow a cancellation that lands as the connect completes.
            async with asyncio.timeout(self.connect_timeout):
                _, proto = await loop.create_connection(
                    lambda: RemotingProtocol(self.router, signer=self.signer),
                    host,
                    port,
                    ssl=self.tls,
                    server_hostname=host if self.tls is not None else None,
                )
        except (OSError, TimeoutError) as exc:
            raise ConnectError(f"cannot connect to {addr}: {exc or 'timed out'}") from None
        assert proto.conn is not None
        sock = proto.conn.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return proto.conn

    async def request(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        conn = await self.connection(addr)
        return await conn.request(cmd, timeout)

    async def oneway(self, addr: str, cmd: RemotingCommand) -> None:
        conn = await self.connection(addr)
        conn.oneway(cmd)

    def drop(self, addr: str) -> None:
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close()

    @property
    def addresses(self) -> list[str]:
        return [a for a, c in self._conns.items() if not c.closed]

    async def close(self) -> None:
        self._closed = True
        for conn in list(self._conns.values()):
            conn.close()
        self._conns.clear()
