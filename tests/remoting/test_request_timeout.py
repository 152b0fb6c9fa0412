"""A request whose answer does not come in time fails with RequestTimeout, and the answer that
comes later is dropped: the connection goes on serving, and no later request gets it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from longboat.protocol import RemotingCommand
from longboat.remoting import RemotingClient, RemotingServer, RequestTimeout, Router

SLOW, ECHO = 998, 999


@pytest.fixture
async def server() -> AsyncIterator[RemotingServer]:
    async def slow(conn: object, cmd: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.5)
        return cmd.make_response(remark="late")

    router = Router("test")
    router.register(SLOW, slow)
    router.register(ECHO, lambda conn, cmd: cmd.make_response(remark="echo"))
    server = RemotingServer(router, "127.0.0.1", 0)
    await server.start()
    yield server
    await server.close()


async def test_a_late_answer_times_the_request_out_and_is_dropped(server: RemotingServer) -> None:
    addr = f"127.0.0.1:{server.port}"
    client = RemotingClient()
    try:
        with pytest.raises(RequestTimeout, match=f"request code {SLOW} within 0.1s"):
            await client.request(addr, RemotingCommand.request(SLOW), timeout=0.1)
        await asyncio.sleep(0.6)  # the late answer arrives meanwhile
        answer = await client.request(addr, RemotingCommand.request(ECHO), timeout=5)
        assert answer.remark == "echo"
        assert client.addresses == [addr]  # one connection throughout, still open
    finally:
        await client.close()


async def test_a_cancelled_request_is_cancelled_not_timed_out(server: RemotingServer) -> None:
    addr = f"127.0.0.1:{server.port}"
    client = RemotingClient()
    try:
        request = asyncio.ensure_future(
            client.request(addr, RemotingCommand.request(SLOW), timeout=0.2)
        )
        await asyncio.sleep(0.05)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        await asyncio.sleep(0.3)  # past the request's timeout: nothing fires for it
        answer = await client.request(addr, RemotingCommand.request(ECHO), timeout=5)
        assert answer.remark == "echo"
    finally:
        await client.close()
