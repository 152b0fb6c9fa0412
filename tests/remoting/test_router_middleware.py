"""The router's middleware chain, over a real loopback connection: a middleware wraps the
handlers of its codes whether they were registered before or after it, sees the request and
its connection, and can refuse with its own response."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from longboat.protocol import RemotingCommand, ResponseCode
from longboat.remoting import (
    Connection,
    Handler,
    HandlerResult,
    RemotingClient,
    RemotingServer,
    Router,
)

SEND, PULL, ADMIN = 310, 11, 17


@pytest.fixture
async def served() -> AsyncIterator[tuple[Router, RemotingClient, str]]:
    router = Router("test")
    server = RemotingServer(router, "127.0.0.1", 0)
    await server.start()
    client = RemotingClient()
    yield router, client, f"127.0.0.1:{server.port}"
    await client.close()
    await server.close()


def answering(remark: str) -> Handler:
    def handler(conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        return cmd.make_response(remark=remark)

    return handler


class Tracer:
    """Records (name, code, peer) on the way in and tags the answer on the way out."""

    def __init__(self, name: str, seen: list[tuple[str, int, str]]) -> None:
        self.name = name
        self.seen = seen

    def __call__(self, conn: Connection, cmd: RemotingCommand, handler: Handler) -> HandlerResult:
        self.seen.append((self.name, cmd.code, conn.peer))
        result = handler(conn, cmd)
        assert isinstance(result, RemotingCommand)
        result.remark = f"{self.name}({result.remark})"
        return result


async def call(client: RemotingClient, addr: str, code: int) -> RemotingCommand:
    return await client.request(addr, RemotingCommand.request(code, {}), timeout=5)


async def test_middleware_wraps_handlers_registered_before_and_after_it(
    served: tuple[Router, RemotingClient, str],
) -> None:
    router, client, addr = served
    seen: list[tuple[str, int, str]] = []
    router.register(SEND, answering("send"))
    router.use(Tracer("outer", seen))
    router.use(Tracer("inner", seen), codes=(SEND, PULL))
    router.register(PULL, answering("pull"))
    router.register(ADMIN, answering("admin"))

    assert (await call(client, addr, SEND)).remark == "outer(inner(send))"
    assert (await call(client, addr, PULL)).remark == "outer(inner(pull))"
    assert (await call(client, addr, ADMIN)).remark == "outer(admin)"  # not one of inner's codes
    assert [(name, code) for name, code, _ in seen] == [
        ("outer", SEND), ("inner", SEND), ("outer", PULL), ("inner", PULL), ("outer", ADMIN),
    ]  # fmt: skip
    # The middleware sees the connection: its peer is the client's side of the socket.
    peers = {peer for _, _, peer in seen}
    assert len(peers) == 1 and peers.pop().startswith("127.0.0.1:")


async def test_middleware_refuses_without_calling_the_handler(
    served: tuple[Router, RemotingClient, str],
) -> None:
    router, client, addr = served
    called: list[int] = []

    def handler(conn: Connection, cmd: RemotingCommand) -> HandlerResult:
        called.append(cmd.code)
        return cmd.make_response()

    def deny_admin(conn: Connection, cmd: RemotingCommand, handler: Handler) -> HandlerResult:
        if cmd.code == ADMIN:
            return cmd.make_response(ResponseCode.NO_PERMISSION, f"{conn.peer} may not administer")
        return handler(conn, cmd)

    router.use(deny_admin)
    router.register(SEND, handler)
    router.register(ADMIN, handler)
    refused = await call(client, addr, ADMIN)
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark is not None and refused.remark.endswith("may not administer")
    assert (await call(client, addr, SEND)).code == ResponseCode.SUCCESS
    assert called == [SEND]


async def test_a_coroutine_handler_answers_through_the_chain(
    served: tuple[Router, RemotingClient, str],
) -> None:
    router, client, addr = served
    seen: list[tuple[str, int, str]] = []

    async def slow(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0)
        return cmd.make_response(remark="late")

    def counting(conn: Connection, cmd: RemotingCommand, handler: Handler) -> HandlerResult:
        seen.append(("counting", cmd.code, conn.peer))
        return handler(conn, cmd)

    router.register(SEND, slow)
    router.use(counting, codes=(SEND,))
    assert (await call(client, addr, SEND)).remark == "late"
    assert [code for _, code, _ in seen] == [SEND]
    await router.drain()
