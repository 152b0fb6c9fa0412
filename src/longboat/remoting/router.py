"""Request routing: code → handler, through a middleware chain, with the Java server's error
answers.

A handler receives (connection, request) and returns a response, None (no response now:
one-way requests, or an answer written later, as long polling does), or an awaitable of
either.  Plain handlers run in-line — the send path depends on that to append in arrival
order — and coroutines run as tasks, which the connection counts as in flight.

Middleware is how a concern that cuts across handlers (metrics, access control, tracing)
plugs in without replacing anyone's handler: `use(middleware, codes=...)` puts it around the
handlers of those codes (every code when None), whether they are registered before or after,
so the order in which modules install does not matter.  A middleware is called as
`middleware(conn, request, next_handler)` and returns what a handler returns: it may call
`next_handler(conn, request)` and look at (or count) the result, or refuse by returning its
own response without calling it.  Middlewares run in the order they were added, the first
outermost; each code's chain is composed once, when a handler or a middleware is added, so a
request pays one call per middleware that applies to its code and nothing for the others.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from longboat.protocol import HeaderFieldError, ProtocolError, RemotingCommand, ResponseCode
from longboat.remoting.connection import Connection

log = logging.getLogger(__name__)

HandlerResult = RemotingCommand | None | Awaitable[RemotingCommand | None]
Handler = Callable[[Connection, RemotingCommand], HandlerResult]
Middleware = Callable[[Connection, RemotingCommand, Handler], HandlerResult]


class Router:
    """Answers a connection's requests (it is the connection's `RequestHandler`)."""

    def __init__(self, name: str = "server") -> None:
        self.name = name
        self._handlers: dict[int, Handler] = {}
        self._middlewares: list[tuple[Middleware, frozenset[int] | None]] = []
        self._chains: dict[int, Handler] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def register(self, code: int, handler: Handler) -> None:
        """Answer `code` with `handler` (replacing an earlier one), behind the middlewares."""
        self._handlers[int(code)] = handler
        self._chains[int(code)] = self._chain(int(code))

    def register_all(self, routes: Mapping[int, Handler]) -> None:
        """`register` each code of `routes`, a module's request codes and their handlers
        declared as one table."""
        for code, handler in routes.items():
            self.register(code, handler)

    def use(self, middleware: Middleware, *, codes: Iterable[int] | None = None) -> None:
        """Put `middleware` around the handlers of `codes` (all codes when None), present
        and future, inside the middlewares added before it."""
        self._middlewares.append((middleware, None if codes is None else frozenset(codes)))
        self._chains = {code: self._chain(code) for code in self._handlers}

    def _chain(self, code: int) -> Handler:
        handler = self._handlers[code]
        for middleware, codes in reversed(self._middlewares):
            if codes is None or code in codes:
                handler = _Link(middleware, handler)
        return handler

    def handle(self, conn: Connection, cmd: RemotingCommand) -> asyncio.Task[None] | None:
        handler = self._chains.get(cmd.code)
        if handler is None:
            if not cmd.is_oneway:
                conn.send(
                    cmd.make_response(
                        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                        f" request type {cmd.code} not supported",
                    )
                )
            return None
        try:
            result = handler(conn, cmd)
        except Exception as exc:
            self._answer_error(conn, cmd, exc)
            return None
        if (
            type(result) is not RemotingCommand
            and result is not None
            and inspect.isawaitable(result)
        ):
            task = asyncio.ensure_future(self._finish(conn, cmd, result))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return task
        if result is not None and not cmd.is_oneway:
            conn.send(result)
        return None

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

    def _answer_error(self, conn: Connection, cmd: RemotingCommand, exc: Exception) -> None:
        if isinstance(exc, HeaderFieldError | ProtocolError):
            conn.log_bad_request(cmd.code, exc)
        else:
            log.exception("handler for code %s failed (peer %s)", cmd.code, conn.peer)
        if not cmd.is_oneway:
            conn.send(cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{exc}"))

    async def drain(self) -> None:
        """Wait for handlers still running (graceful shutdown)."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


class _Link:
    """One middleware bound to the rest of its code's chain: a handler."""

    __slots__ = ("_middleware", "_next")

    def __init__(self, middleware: Middleware, next_handler: Handler) -> None:
        self._middleware = middleware
        self._next = next_handler

    def __call__(self, conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        return self._middleware(conn, cmd, self._next)
