"""ACL with the real Java client: RocketMQ 4.9.8's producer and push consumer, signing with
`AclClientRPCHook`, are allowed or refused by a Longboat broker exactly as plain_acl.yml says
(the accounts of tests/broker/test_acl_wire.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from broker.test_acl_wire import ACL, client
from client.client_e2e import unique
from conftest import Cluster
from longboat.client.admin import Admin
from longboat.protocol import ResponseCode
from peers.rocketmq import run_java_peer, start_java_peer

pytestmark = pytest.mark.java


@pytest.fixture
def cluster(loopback_cluster: Callable[..., Cluster], tmp_path: Path) -> Cluster:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    cluster = loopback_cluster(acl_enable=True, plain_acl_file=path)

    async def create() -> None:
        async with Admin(config=client(cluster, "adminuser", "admin-secret")) as admin:
            for topic in ("Orders", "Other"):
                await admin.create_topic(topic, queue_nums=2)

    cluster.runner.run(create())
    return cluster


def produce(cluster: Cluster, topic: str, access_key: str, secret_key: str) -> list[dict]:
    return run_java_peer(
        "Produce",
        namesrv=cluster.namesrv_addr,
        topic=topic,
        count=3,
        access_key=access_key,
        secret_key=secret_key,
        timeout_ms=40000,
        timeout=60,
        check=False,
    )


def refusal_code(events: list[dict]) -> int | None:
    errors = [e for e in events if e["event"] == "error"]
    return errors[-1].get("code") if errors else None


def test_the_java_client_with_aclclientrpchook_is_allowed_and_refused_as_the_file_says(
    java_peers: None, cluster: Cluster
) -> None:
    sent = produce(cluster, "Orders", "producer1", "producer-secret")
    ids = {e["msgId"] for e in sent if e["event"] == "sent"}
    assert len(ids) == 3, sent
    # No PUB on Other; a wrong secret; an account that does not exist.
    for topic, key, secret in (
        ("Other", "producer1", "producer-secret"),
        ("Orders", "producer1", "wrong-secret"),
        ("Orders", "nobody12", "whatever1"),
    ):
        events = produce(cluster, topic, key, secret)
        assert not [e for e in events if e["event"] == "sent"], (topic, key, events)
        assert refusal_code(events) == ResponseCode.NO_PERMISSION, (topic, key, events)

    with start_java_peer(
        "PushConsume",
        namesrv=cluster.namesrv_addr,
        topic="Orders",
        group="readers",
        access_key="consumer1",
        secret_key="consumer-secret",
        expect=3,
        timeout_ms=60000,
    ) as consumer:
        events = consumer.wait(timeout=90)
    got = {e["msgId"] for e in events if e["event"] == "msg"}
    assert got == ids


def test_a_java_consumer_without_sub_on_its_group_gets_nothing(
    java_peers: None, cluster: Cluster
) -> None:
    produce(cluster, "Orders", "producer1", "producer-secret")
    events = run_java_peer(
        "PushConsume",
        namesrv=cluster.namesrv_addr,
        topic="Orders",
        group=unique("not_listed"),
        access_key="consumer1",
        secret_key="consumer-secret",
        expect=1,
        timeout_ms=8000,
        timeout=60,
        check=False,
    )
    assert not [e for e in events if e["event"] == "msg"], events
