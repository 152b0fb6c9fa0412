"""Request routing: code → handler, with the Java server's error answers.

A handler receives (connection, request) and returns a response, None (no response now:
one-way requests, or an answer written later, as long polling does), or an awaitable of
either.  Plain handlers run in-line — the send path depends on that to append in arrival
order — and coroutines run as tasks.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable

from longboat.protocol import HeaderFieldError, ProtocolError, RemotingCommand, ResponseCode
from longboat.remoting.connection import Connection

log = logging.getLogger(__name__)

HandlerResult = RemotingCommand | None | Awaitable[RemotingCommand | None]
Handler = Callable[[Connection, RemotingCommand], HandlerResult]


class Router:
    def __init__(self, name: str = "server") -> None:
        self.name = name
        self._handlers: dict[int, Handler] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def register(self, code: int, handler: Handler) -> None:
        self._handlers[int(code)] = handler

    def handles(self, code: int) -> bool:
        return int(code) in self._handlers

    def handler(self, code: int) -> Handler | None:
        """The handler registered for `code`, so a later module can wrap it (metrics)."""
        return self._handlers.get(int(code))

    def handle(self, conn: Connection, cmd: RemotingCommand) -> None:
        handler = self._handlers.get(cmd.code)
        if handler is None:
            if not cmd.is_oneway:
                conn.send(
                    cmd.make_response(
                        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                        f" request type {cmd.code} not supported",
                    )
                )
            return
        try:
            result = handler(conn, cmd)
        except Exception as exc:
            self._answer_error(conn, cmd, exc)
            return
        if inspect.isawaitable(result):
            conn.handler_started()
            task = asyncio.ensure_future(self._finish(conn, cmd, result))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif result is not None and not cmd.is_oneway:
            conn.send(result)

    async def _finish(
        self, conn: Connection, cmd: RemotingCommand, pending: Awaitable[RemotingCommand | None]
    ) -> None:
        try:
            response = await pending
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._answer_error(conn, cmd, exc)
        else:
            if response is not None and not cmd.is_oneway:
                conn.send(response)
        finally:
            conn.handler_finished()

    def _answer_error(self, conn: Connection, cmd: RemotingCommand, exc: Exception) -> None:
        if isinstance(exc, HeaderFieldError | ProtocolError):
            log.info("bad request code %s from %s: %s", cmd.code, conn.peer, exc)
        else:
            log.exception("handler for code %s failed (peer %s)", cmd.code, conn.peer)
        if not cmd.is_oneway:
            conn.send(cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{exc}"))

    async def drain(self) -> None:
        """Wait for handlers still running (graceful shutdown)."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
