"""ACL as RocketMQ 4.x (aclEnable + plain_acl.yml) over the wire, with Longboat's own client:
each request allowed or refused exactly as the file says, the file reloaded when it changes,
and the name server's route-changing commands protected too."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Cluster
from longboat.client import BrokerError, ClientConfig, Message
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.namesrv import NameServer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.acl_signature import signature, signer
from longboat.protocol.headers import BrokerIdentityHeader
from longboat.remoting import RemotingClient

ACL = """
globalWhiteRemoteAddresses:
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - Orders=PUB
  - accessKey: consumer1
    secretKey: consumer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - Orders=SUB
    groupPerms:
      - readers=SUB
  - accessKey: adminuser
    secretKey: admin-secret
    admin: true
"""


def client(cluster: Cluster, access_key: str | None, secret_key: str | None) -> ClientConfig:
    return ClientConfig(
        [cluster.namesrv_addr],
        client_ip="127.0.0.1",
        instance_name=f"acl-{access_key}-{time.monotonic_ns()}",
        access_key=access_key,
        secret_key=secret_key,
    )


async def send(cluster: Cluster, topic: str, access_key: str | None, secret: str | None) -> None:
    async with Producer("acl_pg", config=client(cluster, access_key, secret)) as producer:
        await producer.send(Message(topic, b"hello"))


async def consume(
    cluster: Cluster,
    topic: str,
    group: str,
    key: str,
    secret: str,
    timeout: float = 15.0,
    until: Callable[[], bool] = lambda: False,
) -> list[bytes]:
    """What the group reads, once something arrived or `until()` holds."""
    consumer = LitePullConsumer(
        group, config=client(cluster, key, secret), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    async with consumer:
        consumer.subscribe(topic)
        deadline = time.monotonic() + timeout
        got: list[bytes] = []
        while not got and not until() and time.monotonic() < deadline:
            got += [m.body for m in await consumer.poll(timeout=0.5)]
        return got


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    return path


@pytest.fixture
def cluster(loopback_cluster: Callable[..., Cluster], acl_file: Path) -> Cluster:
    cluster = loopback_cluster(acl_enable=True, plain_acl_file=acl_file)

    # Topics exist up front (an admin's job under ACL).
    async def create() -> None:
        async with Admin(config=client(cluster, "adminuser", "admin-secret")) as admin:
            for topic in ("Orders", "Other"):
                await admin.create_topic(topic, queue_nums=1)

    cluster.runner.run(create())
    return cluster


def refused(cluster: Cluster, coro: object, *words: str) -> BrokerError:
    with pytest.raises(BrokerError) as caught:
        cluster.runner.run(coro)  # type: ignore[arg-type]
    error = caught.value
    assert error.code == ResponseCode.NO_PERMISSION, error
    for word in words:
        assert word in error.remark, error.remark
    assert "plain_acl.yml" in error.remark
    return error


def test_the_signature_is_rocketmqs() -> None:
    # Values in key order, Signature and the unique-key flag left out, then the body.
    ext = {"b": "2", "a": "1", "Signature": "x", "_UNIQUE_KEY_QUERY": "true", "AccessKey": "k"}
    import base64
    import hashlib
    import hmac

    expected = base64.b64encode(
        hmac.new(b"secret-key", b"k12" + b"body", hashlib.sha1).digest()
    ).decode()
    assert signature(ext, b"body", "secret-key") == expected


def test_producers_are_allowed_and_refused_as_the_file_says(cluster: Cluster) -> None:
    cluster.runner.run(send(cluster, "Orders", "producer1", "producer-secret"))
    refused(cluster, send(cluster, "Other", "producer1", "producer-secret"), "PUB", "Other")
    refused(cluster, send(cluster, "Orders", "producer1", "wrong-secret"), "signature")
    refused(cluster, send(cluster, "Orders", None, None), "not signed")
    refused(cluster, send(cluster, "Orders", "nobody12", "whatever1"), "nobody12")


def test_consumers_need_sub_on_the_topic_and_the_group(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.runner.run(send(cluster, "Orders", "producer1", "producer-secret"))
    got = cluster.runner.run(consume(cluster, "Orders", "readers", "consumer1", "consumer-secret"))
    assert got == [b"hello"]
    # The producer's account may not read; the consumer's may not use another group: their
    # requests reach the broker and are refused (logged), and nothing arrives.
    run = cluster.runner.run

    def refused(key: str, what: str) -> Callable[[], bool]:
        reason = f"AccessKey '{key}' has no SUB permission on {what}"
        return lambda: any(reason in r.getMessage() for r in caplog.records)

    with caplog.at_level(logging.INFO, logger="longboat.acl.access_control"):
        seen = refused("producer1", "group 'readers'")
        got = run(consume(cluster, "Orders", "readers", "producer1", "producer-secret", 20, seen))
        assert got == [] and seen()
        seen = refused("consumer1", "group 'others'")
        got = run(consume(cluster, "Orders", "others", "consumer1", "consumer-secret", 20, seen))
        assert got == [] and seen()


def test_admin_codes_need_an_admin_account(cluster: Cluster) -> None:
    async def create(key: str, secret: str) -> None:
        async with Admin(config=client(cluster, key, secret)) as admin:
            await admin.create_topic("Created", queue_nums=1)

    refused(cluster, create("producer1", "producer-secret"), "admin")
    cluster.runner.run(create("adminuser", "admin-secret"))


def test_the_file_is_reloaded_when_it_changes(
    cluster: Cluster, acl_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    refused(cluster, send(cluster, "Other", "producer1", "producer-secret"))
    acl_file.write_text(
        ACL.replace("      - Orders=PUB\n", "      - Orders=PUB\n      - Other=PUB\n", 1)
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            cluster.runner.run(send(cluster, "Other", "producer1", "producer-secret"))
            break
        except BrokerError:
            assert time.monotonic() < deadline, "the changed file was not picked up"
            time.sleep(0.3)
    # A broken file keeps the rules in force: every send passes until the broker logged that
    # it read the file and could not use it, and after.
    acl_file.write_text("accounts: [oops")
    deadline = time.monotonic() + 10
    with caplog.at_level(logging.ERROR, logger="longboat.acl.access_control"):
        while "cannot be used" not in caplog.text:
            assert time.monotonic() < deadline, "the broken file was not read"
            cluster.runner.run(send(cluster, "Other", "producer1", "producer-secret"))
    cluster.runner.run(send(cluster, "Other", "producer1", "producer-secret"))


def test_global_white_addresses_need_no_signature(
    loopback_cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    path = tmp_path / "white.yml"
    path.write_text(
        ACL.replace("globalWhiteRemoteAddresses:\n", "globalWhiteRemoteAddresses:\n  - 127.0.0.*\n")
    )
    cluster = loopback_cluster(acl_enable=True, plain_acl_file=path)
    cluster.runner.run(send(cluster, "Anything", None, None))


def test_name_server_write_commands_need_an_admin_signature(acl_file: Path) -> None:
    async def scenario() -> None:
        namesrv = NameServer("127.0.0.1", 0, acl_file=acl_file)
        await namesrv.start()
        unregister = BrokerIdentityHeader(
            brokerName="b", brokerAddr="127.0.0.1:1", clusterName="c", brokerId=0
        ).to_ext()
        try:
            for credentials in (None, ("producer1", "producer-secret")):
                remote = RemotingClient(signer=signer(*credentials) if credentials else None)
                request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(unregister))
                answer = await remote.request(namesrv.addr, request, 5)
                assert answer.code == ResponseCode.NO_PERMISSION, answer.remark
                # Reads stay open.
                routes = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
                assert (await remote.request(namesrv.addr, routes, 5)).code == 0
                await remote.close()
            admin = RemotingClient(signer=signer("adminuser", "admin-secret"))
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(unregister))
            assert (await admin.request(namesrv.addr, request, 5)).code == ResponseCode.SUCCESS
            await admin.close()
        finally:
            await namesrv.stop()

    asyncio.run(scenario())


def test_a_broker_with_an_admin_account_registers_with_a_protected_name_server(
    tmp_path: Path, acl_file: Path
) -> None:
    from conftest import LoopThread, broker_config
    from longboat.broker import BrokerController

    runner = LoopThread()
    namesrv = NameServer("127.0.0.1", 0, acl_file=acl_file)
    runner.run(namesrv.start())
    broker = BrokerController(
        broker_config(
            tmp_path / "store", namesrv.addr, access_key="adminuser", secret_key="admin-secret"
        )
    )
    try:
        runner.run(broker.start())
        assert runner.run(broker.register_now())
        assert namesrv.routes.cluster_info().broker_addr_table
    finally:
        runner.run(broker.stop())
        runner.run(namesrv.stop())
        runner.close()
