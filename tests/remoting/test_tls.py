"""TLS as RocketMQ 4.x has it, over real loopback sockets with a certificate made by the
suite: `tls.server.mode` disabled / permissive / enforcing decides which clients are served,
and Longboat's producer and consumer reach a name server and broker over TLS."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from conftest import LoopThread, broker_config
from longboat.broker import BrokerController
from longboat.client import ClientConfig, Message
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.namesrv import NameServer
from longboat.protocol import RemotingCommand
from longboat.remoting import RemotingClient, RemotingError, RemotingServer, Router
from longboat.remoting.errors import ConnectError
from longboat.remoting.tls import ServerTls, TlsMode, client_context
from peers.tls_certs import Certificate, self_signed

ECHO = 999


async def echo_server(mode: TlsMode, cert: Certificate) -> RemotingServer:
    router = Router("test")
    router.register(ECHO, lambda conn, cmd: cmd.make_response(remark="echo"))
    server = RemotingServer(
        router, "127.0.0.1", 0, tls=ServerTls(mode, str(cert.cert), str(cert.key))
    )
    await server.start()
    return server


async def answered(addr: str, client: RemotingClient) -> bool:
    try:
        response = await client.request(addr, RemotingCommand.request(ECHO), timeout=3)
    except RemotingError:
        return False
    finally:
        await client.close()
    return response.remark == "echo"


@pytest.mark.parametrize(
    ("mode", "plain_served", "tls_served"),
    [
        (TlsMode.DISABLED, True, False),
        (TlsMode.PERMISSIVE, True, True),
        (TlsMode.ENFORCING, False, True),
    ],
)
async def test_the_server_mode_decides_who_is_served(
    tls_cert: Certificate, mode: TlsMode, plain_served: bool, tls_served: bool
) -> None:
    server = await echo_server(mode, tls_cert)
    addr = f"127.0.0.1:{server.port}"
    try:
        assert await answered(addr, RemotingClient()) is plain_served
        assert await answered(addr, RemotingClient(tls=client_context())) is tls_served
        # A client that checks the certificate against the CA accepts this one.
        verified = RemotingClient(tls=client_context(str(tls_cert.cert)))
        assert await answered(addr, verified) is tls_served
    finally:
        await server.close()


async def test_a_client_with_a_ca_file_refuses_a_server_the_ca_did_not_sign(
    tls_cert: Certificate, tmp_path: Path
) -> None:
    server = await echo_server(TlsMode.ENFORCING, tls_cert)
    addr = f"127.0.0.1:{server.port}"
    other_ca = await asyncio.to_thread(self_signed, tmp_path)  # same names, another key
    try:
        client = RemotingClient(tls=client_context(str(other_ca.cert)))
        with pytest.raises(ConnectError, match="certificate verify failed"):
            await client.request(addr, RemotingCommand.request(ECHO), timeout=3)
        await client.close()
        # The server itself is fine: the right CA is served.
        assert await answered(addr, RemotingClient(tls=client_context(str(tls_cert.cert))))
    finally:
        await server.close()


async def test_a_tls_mode_without_a_certificate_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match=r"tls\.server\.certPath"):
        RemotingServer(Router("test"), tls=ServerTls(TlsMode.ENFORCING))


def test_producer_and_consumer_over_tls_to_an_enforcing_cluster(
    tls_cert: Certificate, tmp_path: Path
) -> None:
    runner = LoopThread()
    tls = ServerTls(TlsMode.ENFORCING, str(tls_cert.cert), str(tls_cert.key))
    namesrv = NameServer("127.0.0.1", 0, tls=tls)
    runner.run(namesrv.start())
    config = broker_config(
        tmp_path / "store",
        namesrv.addr,
        tls_server_mode="enforcing",
        tls_server_cert_path=str(tls_cert.cert),
        tls_server_key_path=str(tls_cert.key),
        tls_enable=True,  # it registers with the name server over TLS too
    )
    broker = BrokerController(config)
    client = ClientConfig(
        [namesrv.addr], client_ip="127.0.0.1", instance_name="tls", tls=True,
        tls_ca_file=str(tls_cert.cert),
    )  # fmt: skip

    async def scenario() -> list[bytes]:
        async with Producer("tls_pg", config=client) as producer:
            for i in range(3):
                await producer.send(Message("OverTls", b"secret-%d" % i))
        consumer = LitePullConsumer(
            "tls_group", config=client, consume_from=ConsumeFrom.FIRST_OFFSET
        )
        got: list[bytes] = []
        async with consumer:
            consumer.subscribe("OverTls")
            deadline = time.monotonic() + 20
            while len(got) < 3 and time.monotonic() < deadline:
                got += [m.body for m in await consumer.poll(timeout=0.5)]
        return got

    try:
        runner.run(broker.start())
        # Sends spread over the topic's queues; a consumer promises no order across queues.
        got = runner.run(scenario(), timeout=60)
        assert sorted(got) == [b"secret-0", b"secret-1", b"secret-2"]
        plain = ClientConfig([namesrv.addr], client_ip="127.0.0.1", instance_name="plain")

        async def plain_send() -> None:
            async with Producer("plain_pg", config=plain) as producer:
                await producer.send(Message("OverTls", b"x"))

        with pytest.raises(Exception):  # noqa: B017 - any failure: it must not get through
            runner.run(asyncio.wait_for(plain_send(), 20), timeout=30)
    finally:
        runner.run(broker.stop())
        runner.run(namesrv.stop())
        runner.close()
