"""A broker closes a silent connection after `serverChannelMaxIdleTimeSeconds` (RocketMQ's
idle handler), and only a silent one: a client that heartbeats keeps its connection, and a
pull held longer than the idle time is answered, not cut.  The name server takes the same
key from its namesrv.conf.  Real servers on loopback with a one-second idle time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import Cluster
from longboat.cli.main import cli
from longboat.client import ClientConfig, Message
from longboat.client.producer import Producer
from longboat.namesrv import NameServer
from longboat.namesrv.server import NAMESRV_LIMITS, namesrv_limits
from longboat.protocol import ResponseCode

from .wire import Wire, pulled, sent

IDLE_S = 1
TOPIC = "IdleTopic"
SAFETY_S = 20.0  # far beyond the idle time: only a server that never closes reaches it


async def opened_silently(addr: str) -> asyncio.StreamReader:
    """A raw socket to `addr` that never sends a byte; its reader sees EOF once the server
    closes it."""
    host, port = addr.rsplit(":", 1)
    reader, _writer = await asyncio.open_connection(host, int(port))
    return reader


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    return await asyncio.wait_for(reader.read(), SAFETY_S) == b""


async def test_a_silent_socket_is_closed_and_a_heartbeating_client_kept(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(server_channel_max_idle_time_seconds=IDLE_S)
    config = ClientConfig(
        [cluster.namesrv_addr],
        client_ip="127.0.0.1",
        instance_name="heartbeating",
        heartbeat_broker_interval=IDLE_S / 4,
    )
    async with Producer("idle_pg", config=config) as producer:
        sent_first = await producer.send(Message(TOPIC, b"first"))
        remoting = producer.instance.remoting
        conn = await remoting.connection(cluster.broker_addr)
        silent = await opened_silently(cluster.broker_addr)
        assert await closed_by_server(silent)
        # Twice the idle time more, while the producer only heartbeats.
        await asyncio.sleep(2 * IDLE_S)
        assert not conn.closed
        assert await remoting.connection(cluster.broker_addr) is conn
        sent_again = await producer.send(Message(TOPIC, b"again"))
    assert sent_again.queue_offset >= 0 and sent_first.msg_id != sent_again.msg_id


async def test_a_pull_held_longer_than_the_idle_time_is_answered(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(server_channel_max_idle_time_seconds=IDLE_S)
    wire = Wire(cluster.broker_addr)
    try:
        sent(await wire.send(TOPIC, b"seed", queue_id=0))
        response = await wire.pull(TOPIC, 0, 1, suspend_ms=3_000 * IDLE_S, timeout=SAFETY_S)
        assert response.code == ResponseCode.PULL_NOT_FOUND
        assert pulled(response).maxOffset == 1
        # Answered, it is idle again and goes like any other.
        conn = await wire.client.connection(cluster.broker_addr)
        await asyncio.wait_for(conn.wait_closed(), SAFETY_S)
    finally:
        await wire.close()


async def test_the_name_server_closes_a_silent_socket_after_its_conf_idle_time() -> None:
    limits = namesrv_limits({"serverChannelMaxIdleTimeSeconds": str(IDLE_S)})
    assert limits.idle_timeout_s == IDLE_S
    namesrv = NameServer("127.0.0.1", 0, limits=limits)
    await namesrv.start()
    try:
        assert await closed_by_server(await opened_silently(namesrv.addr))
    finally:
        await namesrv.stop()


def test_the_name_server_idle_time_defaults_to_rocketmqs_and_refuses_nonsense() -> None:
    assert namesrv_limits({}).idle_timeout_s == NAMESRV_LIMITS.idle_timeout_s == 120
    for bad in ("0", "-5", "two minutes"):
        with pytest.raises(ValueError, match="serverChannelMaxIdleTimeSeconds"):
            namesrv_limits({"serverChannelMaxIdleTimeSeconds": bad})


def test_longboat_namesrv_refuses_a_conf_idle_time_that_is_no_number(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text("serverChannelMaxIdleTimeSeconds=soon\n")
    result = CliRunner().invoke(cli, ["namesrv", "--port", "0", "-c", str(conf)])
    assert result.exit_code == 1
    assert "serverChannelMaxIdleTimeSeconds = 'soon'" in result.stderr
