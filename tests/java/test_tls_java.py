"""TLS with the real Java client: RocketMQ 4.9.8's producer and push consumer with
`setUseTLS(true)` reach a Longboat name server (tls.server.mode=permissive) and broker
(enforcing), with a certificate made by the suite, and read every message back intact."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from client.client_e2e import unique
from conftest import LoopThread, broker_config
from longboat.broker import BrokerController
from longboat.namesrv import NameServer
from longboat.remoting.tls import ServerTls, TlsMode
from peers.rocketmq import run_java_peer, start_java_peer
from peers.tls_certs import Certificate

pytestmark = pytest.mark.java


@pytest.fixture
def tls_cluster(tls_cert: Certificate, tmp_path: Path) -> Iterator[str]:
    runner = LoopThread()
    namesrv = NameServer(
        "127.0.0.1",
        0,
        tls=ServerTls(TlsMode.PERMISSIVE, str(tls_cert.cert), str(tls_cert.key)),
    )
    runner.run(namesrv.start())
    broker = BrokerController(
        broker_config(
            tmp_path / "store",
            namesrv.addr,
            tls_server_mode="enforcing",
            tls_server_cert_path=str(tls_cert.cert),
            tls_server_key_path=str(tls_cert.key),
            tls_enable=True,
        )
    )
    try:
        runner.run(broker.start())
        yield namesrv.addr
    finally:
        runner.run(broker.stop())
        runner.run(namesrv.stop())
        runner.close()


def test_the_java_client_with_setusetls_produces_and_consumes(
    java_peers: None, tls_cluster: str
) -> None:
    topic, group = unique("JavaTls"), unique("java_tls_group")
    sent = run_java_peer(
        "Produce", namesrv=tls_cluster, topic=topic, count=4, tls="true", timeout_ms=40000,
        timeout=60,
    )  # fmt: skip
    sent_ids = {e["msgId"]: e["i"] for e in sent if e["event"] == "sent"}
    assert len(sent_ids) == 4
    with start_java_peer(
        "PushConsume", namesrv=tls_cluster, topic=topic, group=group, expect=4, tls="true",
        timeout_ms=60000,
    ) as consumer:  # fmt: skip
        events = consumer.wait(timeout=90)
    got = {e["msgId"]: e["body"] for e in events if e["event"] == "msg"}
    assert got == {msg_id: f"sync-{i}" for msg_id, i in sent_ids.items()}


def test_a_java_client_without_tls_is_not_served_by_an_enforcing_broker(
    java_peers: None, tls_cluster: str
) -> None:
    events = run_java_peer(
        "Produce", namesrv=tls_cluster, topic=unique("JavaPlain"), count=1, timeout_ms=15000,
        timeout=60, check=False,
    )  # fmt: skip
    assert not [e for e in events if e["event"] == "sent"], events
