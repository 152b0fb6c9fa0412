"""A server's connection cap and idle timeout, over real loopback sockets: a connection over
the cap has its request answered SYSTEM_BUSY with a remark naming the setting, and is closed;
a silent connection is closed after the idle timeout while a talking one stays, and one whose
request is still being answered is not idle."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from longboat.broker import BrokerConfig
from longboat.protocol import RemotingCommand, ResponseCode
from longboat.remoting import (
    Connection,
    ConnectionClosed,
    ConnectionLimits,
    RemotingClient,
    RemotingServer,
    Router,
)

ECHO = 999
SLOW = 998
SLOW_S = 2.5  # longer than the idle timeout


async def answer_slowly(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
    await asyncio.sleep(SLOW_S)
    return cmd.make_response(remark="slow")


@pytest.fixture
async def server() -> AsyncIterator[RemotingServer]:
    router = Router("test")
    router.register(ECHO, lambda conn, cmd: cmd.make_response(remark="echo"))
    router.register(SLOW, answer_slowly)
    limits = ConnectionLimits(
        max_connections=2,
        idle_timeout_s=1.0,
        max_connections_setting="maxConnections",
        idle_timeout_setting="serverChannelMaxIdleTimeSeconds",
    )
    server = RemotingServer(router, "127.0.0.1", 0, limits=limits)
    await server.start()
    yield server
    await server.close()


async def echo(client: RemotingClient, addr: str) -> RemotingCommand:
    return await client.request(addr, RemotingCommand.request(ECHO), timeout=5)


async def test_a_connection_over_the_cap_is_answered_busy_and_closed(
    server: RemotingServer,
) -> None:
    addr = f"127.0.0.1:{server.port}"
    first, second, third = RemotingClient(), RemotingClient(), RemotingClient()
    try:
        assert (await echo(first, addr)).remark == "echo"
        assert (await echo(second, addr)).remark == "echo"
        refused = await echo(third, addr)
        assert refused.code == ResponseCode.SYSTEM_BUSY
        assert "maxConnections" in (refused.remark or "") and "2" in (refused.remark or "")
        await asyncio.sleep(0.1)
        assert third.addresses == []  # closed by the server after answering
        await first.close()
        for _ in range(50):  # the server hears the close
            if len(server.connections) < 2:
                break
            await asyncio.sleep(0.02)
        assert (await echo(third, addr)).remark == "echo"  # room again
    finally:
        for client in (first, second, third):
            await client.close()


async def test_an_idle_connection_is_closed_and_a_talking_one_kept(
    server: RemotingServer,
) -> None:
    addr = f"127.0.0.1:{server.port}"
    silent, talking = RemotingClient(), RemotingClient()
    try:
        await echo(silent, addr)
        conn = await silent.connection(addr)
        started = time.monotonic()
        while time.monotonic() - started < 2.5:
            assert (await echo(talking, addr)).remark == "echo"
            await asyncio.sleep(0.2)
        assert conn.closed
        with pytest.raises(ConnectionClosed):
            await conn.request(RemotingCommand.request(ECHO), timeout=1)
        assert talking.addresses == [addr]
    finally:
        await silent.close()
        await talking.close()


async def test_a_connection_waiting_for_a_long_answer_is_not_idle(
    server: RemotingServer,
) -> None:
    addr = f"127.0.0.1:{server.port}"
    client = RemotingClient()
    try:
        slow = await client.request(addr, RemotingCommand.request(SLOW), timeout=SLOW_S + 10)
        assert slow.remark == "slow"
        # Answered, the connection is idle again: it goes like any silent one.
        conn = await client.connection(addr)
        await asyncio.wait_for(conn.wait_closed(), 20)
    finally:
        await client.close()


def test_the_broker_settings_name_the_limits() -> None:
    config = BrokerConfig().updated(maxConnections=50, serverChannelMaxIdleTimeSeconds=30)
    limits = config.connection_limits
    assert (limits.max_connections, limits.idle_timeout_s) == (50, 30.0)
    assert limits.idle_timeout_setting == "serverChannelMaxIdleTimeSeconds"
