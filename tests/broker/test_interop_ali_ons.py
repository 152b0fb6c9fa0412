"""The real Node.js RocketMQ client ali-ons against our name server and broker, with nothing of
ours on the client side: it produces, consumes with a tag filter, commits offsets that a second
consumer of the group resumes from, and retries failed messages through send-back and the
group's %RETRY% topic.  What the broker stored and committed is checked over the wire.

(Our own clients talking to ali-ons are in tests/client/test_push_interop_e2e.py.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from cli.processes import ServerProcess
from conftest import Cluster
from longboat.protocol import RequestCode
from longboat.protocol.bodies import ClusterInfo
from longboat.protocol.headers import CreateTopicRequestHeader, QueueRequestHeader
from peers.ali_ons import run_node_peer, start_node_peer

from .wire import Wire, eventually, offset_of

pytestmark = [
    pytest.mark.node,
    pytest.mark.usefixtures("node_peer"),
]

QUEUES = 4
# Delay levels shortened so a send-back (level 3 + reconsume times) comes back in well under
# a second instead of 10 s.
SHORT_LADDER = " ".join(["100ms"] * 18)


async def create_topic(cluster: Cluster, topic: str) -> None:
    """ali-ons never falls back to TBW102, so its topics must exist before it sends."""
    await create_topic_at(cluster.broker_addr, topic)
    await eventually(lambda: cluster.namesrv.routes.route(topic) is not None, "the topic route")


async def broker_of(namesrv: str) -> str:
    """The one broker registered with `namesrv` (GET_BROKER_CLUSTER_INFO)."""
    w = Wire(namesrv)
    try:
        info = ClusterInfo.from_json((await w.call(RequestCode.GET_BROKER_CLUSTER_INFO)).body)
    finally:
        await w.close()
    [broker] = info.broker_addr_table.values()
    return broker.broker_addrs[0]


async def create_topic_at(broker_addr: str, topic: str) -> None:
    w = Wire(broker_addr)
    header = CreateTopicRequestHeader(
        topic=topic,
        defaultTopic="TBW102",
        readQueueNums=QUEUES,
        writeQueueNums=QUEUES,
        perm=6,
    )
    response = await w.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == 0, response.remark
    await w.close()


async def produce(
    namesrv: str, topic: str, count: int, tags: str, body: str
) -> list[dict[str, Any]]:
    events = await asyncio.to_thread(
        run_node_peer,
        "produce.js",
        *("--namesrv", namesrv, "--topic", topic, "--count", str(count)),
        *("--tags", tags, "--body", body, "--keys", body.split("-")[0]),
        *("--timeout-ms", "30000"),
        timeout=40,
    )
    sends = [e for e in events if e["event"] == "sent"]
    assert len(sends) == count
    assert {e["sendStatus"] for e in sends} == {"SEND_OK"}
    return sends


def consumer_args(namesrv: str, topic: str, group: str, *extra: str) -> tuple[str, ...]:
    return ("--namesrv", namesrv, "--topic", topic, "--group", group, *extra)


async def consume_while_producing(
    args: tuple[str, ...], send: Callable[[], Awaitable[list[dict[str, Any]]]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Start an ali-ons consumer with `args`, run `send` once it is ready, and return what was
    sent and the deliveries the consumer reported."""
    with start_node_peer("consume.js", *args, "--timeout-ms", "60000") as consumer:
        await asyncio.to_thread(consumer.wait_for, "ready", 40)
        sends = await send()
        events = await asyncio.to_thread(consumer.wait, 60)
    return sends, [e for e in events if e["event"] == "msg"]


async def committed(cluster: Cluster, group: str, topic: str) -> dict[int, int]:
    w = Wire(cluster.broker_addr)
    try:
        return {q: offset_of(await w.query_offset(group, topic, q)) for q in range(QUEUES)}
    finally:
        await w.close()


async def max_offsets(cluster: Cluster, topic: str, queues: int = QUEUES) -> dict[int, int]:
    w = Wire(cluster.broker_addr)
    try:
        return {
            q: offset_of(
                await w.call(RequestCode.GET_MAX_OFFSET, QueueRequestHeader(topic=topic, queueId=q))
            )
            for q in range(queues)
        }
    finally:
        await w.close()


async def test_ali_ons_produces_and_consumes_by_tag_and_resumes_from_committed_offsets(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    namesrv, topic, group = cluster.namesrv_addr, "AliOnsTagged", "ali-ons-group"
    await create_topic(cluster, topic)

    # Round 1: TagA and TagB interleaved on every queue; the consumer subscribes to TagA.
    args = consumer_args(namesrv, topic, group, "--tags", "TagA", "--expect", "12")
    sends, got = await consume_while_producing(
        args, lambda: produce(namesrv, topic, 24, "TagA,TagB", "round1-{i}")
    )
    tag_a = {f"round1-{e['i']}" for e in sends if e["tags"] == "TagA"}
    assert {e["body"] for e in got} == tag_a
    assert {e["tags"] for e in got} == {"TagA"}
    assert all(e["outcome"] == "ok" and e["reconsumeTimes"] == 0 for e in got)
    # What the broker stored is what ali-ons said it sent.
    assert sum((await max_offsets(cluster, topic)).values()) == 24

    # ali-ons committed (UPDATE_CONSUMER_OFFSET at close) past every TagA message it consumed.
    offsets = await committed(cluster, group, topic)
    for e in sends:
        if e["tags"] == "TagA":
            assert offsets[e["queueId"]] > e["queueOffset"], (e, offsets)

    # Round 2: a new consumer of the group (consume-from "first") resumes at the committed
    # offsets: it sees only what is produced now, none of round 1 again.
    args = consumer_args(namesrv, topic, group, "--tags", "TagA", "--expect", "4")
    _, got = await consume_while_producing(
        (*args, "--linger-ms", "500"), lambda: produce(namesrv, topic, 4, "TagA", "round2-{i}")
    )
    assert sorted(e["body"] for e in got) == [f"round2-{i}" for i in range(4)]


async def test_ali_ons_failed_messages_come_back_through_the_retry_topic(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(message_delay_level=SHORT_LADDER)
    namesrv, topic, group = cluster.namesrv_addr, "AliOnsRetried", "ali-ons-retry-group"
    await create_topic(cluster, topic)

    args = consumer_args(namesrv, topic, group, "--expect", "6", "--fail-first", "2")
    sends, got = await consume_while_producing(
        args, lambda: produce(namesrv, topic, 6, "TagA", "retried-{i}")
    )

    by_body: dict[str, list[dict[str, Any]]] = {}
    for e in got:
        by_body.setdefault(e["body"], []).append(e)
    assert sorted(by_body) == sorted(f"retried-{e['i']}" for e in sends)
    for body, deliveries in by_body.items():
        outcomes = [(d["outcome"], d["reconsumeTimes"]) for d in deliveries]
        # Failed twice (sent back each time), then delivered from %RETRY% and consumed.
        assert outcomes[:3] == [("fail", 0), ("fail", 1), ("ok", 2)], (body, outcomes)
        retried = deliveries[2]
        assert retried["properties"].get("RETRY_TOPIC") == topic
        assert retried["originMsgId"] == deliveries[0]["msgId"]
    # The copies went through the group's retry topic on the broker.
    assert await max_offsets(cluster, f"%RETRY%{group}", queues=1) == {0: 12}


async def test_ali_ons_against_a_longboat_up_process(tmp_path: Path) -> None:
    """The same client against `longboat up` as a user starts it (its own process, uvloop,
    Ctrl-C to stop): produce, consume by tag, and a clean exit."""
    ports = ("--namesrv-port", "0", "--broker-port", "0", "--metrics-port", "0", "--grpc-port", "0")
    up = ServerProcess(["up", "--data", str(tmp_path / "data"), *ports], tmp_path)
    try:
        namesrv = await asyncio.to_thread(up.address_of, "name server")
        broker = await broker_of(namesrv)
        topic, group = "AliOnsUp", "ali-ons-up-group"
        await create_topic_at(broker, topic)
        args = consumer_args(namesrv, topic, group, "--tags", "TagA", "--expect", "5")
        sends, delivered = await consume_while_producing(
            args, lambda: produce(namesrv, topic, 10, "TagA,TagB", "up-{i}")
        )
        got = sorted(e["body"] for e in delivered)
        assert got == sorted(f"up-{e['i']}" for e in sends if e["tags"] == "TagA")
        assert await asyncio.to_thread(up.interrupt) == 0
    finally:
        up.kill()
