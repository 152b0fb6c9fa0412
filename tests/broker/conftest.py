"""The real broker the feature wire tests run against, a bare remoting client to call it, and a
name server of its own for tests that start several brokers (replication)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from longboat.broker import BrokerController
from longboat.namesrv import NameServer
from longboat.remoting import RemotingClient

# Short delay levels, so retries through the schedule topic come back within a test.
TEST_DELAY_LEVELS = "100ms 200ms 300ms 400ms 500ms"


@pytest.fixture
async def broker(
    loopback_broker: Callable[..., Awaitable[BrokerController]],
) -> BrokerController:
    """A running `BrokerController` named broker-a (cluster DefaultCluster) with its own name
    server, on this test's event loop."""
    return await loopback_broker(broker_name="broker-a", message_delay_level=TEST_DELAY_LEVELS)


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    yield c
    await c.close()


@pytest.fixture
async def namesrv() -> AsyncIterator[NameServer]:
    server = NameServer("127.0.0.1", 0)
    await server.start()
    yield server
    await server.stop()
