"""Apache RocketMQ's `mqadmin` (rocketmq-tools 4.9.8 and 5.3.3, `MQAdminStartup`, unchanged) against
Longboat: every command a RocketMQ operator reaches for first runs and prints the figures the
test produced — topics and routes, queue offsets, the cluster and the broker's figures and
settings, a group's connections, progress and lag, message lookups by id and key, a reset by
time, a new subscription group, and a topic's deletion.  Two JVM launches in all (the `MqAdmin`
peer runs many commands in one)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from client.client_e2e import unique
from conftest import Cluster
from longboat.client import ClientConfig, Message
from longboat.client.admin import Admin
from longboat.client.message import SendResult
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeFrom, PushConsumer
from longboat.protocol import fastjson
from longboat.protocol.message import MessageExt
from peers.rocketmq import run_java_peer
from peers.rocketmq5 import run_mqadmin5

pytestmark = pytest.mark.java

QUEUES = 4


@dataclass(frozen=True)
class Tools:
    """One version of rocketmq-tools: `run` runs the `MqAdmin` peer program on it."""

    version: str
    run: Callable[..., list[dict[str, Any]]]


@pytest.fixture(params=["4.9.8", "5.3.3"], ids=["mqadmin4.9.8", "mqadmin5.3.3"])
def tools(request: pytest.FixtureRequest) -> Tools:
    """Each version of mqadmin in turn."""
    if request.param == "4.9.8":
        return Tools("4.9.8", functools.partial(run_java_peer, "MqAdmin"))
    return Tools("5.3.3", run_mqadmin5)


def mqadmin(tools: Tools, namesrv: str, *commands: list[str]) -> dict[str, str]:
    """Run the commands in one JVM; the stdout of each by its command name (stderr must be
    empty: mqadmin prints a failure's stack trace there and still exits 0).  A command line
    mqadmin refuses ends the JVM (exit 1) with its usage on the captured stderr."""
    events = tools.run(
        namesrv=namesrv, commands=json.dumps(commands), timeout_ms=90000, timeout=120
    )
    outputs: dict[str, str] = {}
    for event in events:
        if event["event"] == "command":
            assert event["stderr"] == "", f"mqadmin {event['args']} failed:\n{event['stderr']}"
            outputs[event["args"][0]] = event["stdout"]
    assert len(outputs) == len({c[0] for c in commands}), events
    return outputs


def rows(text: str, header: str) -> list[list[str]]:
    """The whitespace-split rows under the line starting with `header`, to the first blank."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    out = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        out.append(line.split())
    return out


def key_values(text: str, sep: str) -> dict[str, str]:
    pairs = (line.split(sep, 1) for line in text.splitlines() if sep in line)
    return {k.strip(): v.strip() for k, v in pairs}


def per_queue(results: list[SendResult]) -> dict[int, list[int]]:
    offsets: dict[int, list[int]] = {q: [] for q in range(QUEUES)}
    for r in results:
        offsets[r.message_queue.queue_id].append(r.queue_offset)
    return offsets


async def test_mqadmin_commands_print_what_longboat_holds(
    java_peers: None, loopback_cluster: Callable[..., Cluster], tools: Tools
) -> None:
    cluster = loopback_cluster()
    ns, broker_addr = cluster.namesrv_addr, cluster.broker_addr
    broker = cluster.broker
    topic, new_topic = unique("AdminT"), unique("AdminNew")
    group, new_group = unique("admin_g"), unique("admin_new_g")
    config = ClientConfig(
        [ns], client_ip="127.0.0.1", instance_name=unique("c"), persist_consumer_offset_interval=0.1
    )
    async with Admin(config=config) as admin:
        await admin.create_topic(topic, queue_nums=QUEUES)

    # Two batches with a known instant between them, each message with its own key.
    async with Producer(unique("pg"), config=config) as producer:
        first = [
            await producer.send(Message(topic, b"a%d" % i, tags="TagA", keys=[f"key-a{i}"]))
            for i in range(6)
        ]
        await asyncio.sleep(0.05)
        between_ms = int(time.time() * 1000)
        await asyncio.sleep(0.05)
        second = [
            await producer.send(Message(topic, b"b%d" % i, tags="TagB", keys=[f"key-b{i}"]))
            for i in range(4)
        ]
    sent = first + second
    ends = {q: len(offs) for q, offs in per_queue(sent).items()}

    got: list[MessageExt] = []
    consumer = PushConsumer(group, config=config, consume_from=ConsumeFrom.FIRST_OFFSET)
    consumer.subscribe(topic, "TagA || TagB")

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        got.extend(msgs)

    consumer.register_listener(listener)
    await consumer.start()
    try:
        deadline = time.monotonic() + 30
        while sum(max(broker.offsets.query(group, topic, q) or 0, 0) for q in range(QUEUES)) < len(
            sent
        ):
            assert time.monotonic() < deadline, f"group committed too little; got {len(got)}"
            await asyncio.sleep(0.05)
        probe, client_id = second[1], consumer.instance.client_id
        online = await asyncio.to_thread(
            mqadmin,
            tools,
            ns,
            [
                "updateTopic",
                "-c",
                cluster.config.broker_cluster_name,
                "-t",
                new_topic,
                "-r",
                "3",
                "-w",
                "3",
            ],
            [
                "updateSubGroup",
                "-c",
                cluster.config.broker_cluster_name,
                "-g",
                new_group,
                "-r",
                "5",
            ],
            ["topicList"],
            ["topicRoute", "-t", topic],
            ["topicStatus", "-t", topic],
            ["clusterList"],
            ["brokerStatus", "-b", broker_addr],
            ["getBrokerConfig", "-b", broker_addr],
            ["consumerConnection", "-g", group],
            ["consumerProgress", "-g", group],
            # mqadmin 5 asks for the topic too.
            ["queryMsgById", "-i", probe.offset_msg_id]
            + (["-t", topic] if tools.version == "5.3.3" else []),
            ["queryMsgByKey", "-t", topic, "-k", "key-b1"],
        )
    finally:
        await consumer.shutdown()

    assert f"create topic to {broker_addr} success." in online["updateTopic"]
    created = broker.topics.get(new_topic)
    assert created is not None and (created.read_queue_nums, created.write_queue_nums) == (3, 3)
    assert f"create subscription group to {broker_addr} success." in online["updateSubGroup"]
    assert broker.subscription_groups.get(new_group).retry_max_times == 5

    assert {topic, new_topic, f"%RETRY%{group}"} <= set(online["topicList"].split())

    route = fastjson.loads(online["topicRoute"])
    assert [q["writeQueueNums"] for q in route["queueDatas"]] == [QUEUES]
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": broker_addr}

    status = rows(online["topicStatus"], "#Broker Name")
    assert {int(r[1]): (int(r[2]), int(r[3])) for r in status} == {
        q: (0, n) for q, n in ends.items()
    }
    assert {r[0] for r in status} == {cluster.config.broker_name}

    (row,) = rows(online["clusterList"], "#Cluster Name")
    assert row[:5] == [
        cluster.config.broker_cluster_name,
        cluster.config.broker_name,
        "0",
        broker_addr,
        "V4_9_8",
    ]

    figures = key_values(online["brokerStatus"], " : ")
    assert figures["msgPutTotalTodayNow"] == str(len(sent))
    assert int(figures["msgGetTotalTodayNow"]) >= len(sent)
    assert int(figures["commitLogMaxOffset"]) == broker.store.max_physical_offset

    settings = key_values(online["getBrokerConfig"], "=  ")
    assert settings["brokerName"] == cluster.config.broker_name
    assert settings["listenPort"] == broker_addr.rsplit(":", 1)[1]

    connection = online["consumerConnection"]
    assert client_id in connection
    subscriptions = {r[0]: " ".join(r[1:]) for r in rows(connection, "#Topic")}
    assert subscriptions == {topic: "TagA || TagB", f"%RETRY%{group}": "*"}
    assert "ConsumeType: CONSUME_PASSIVELY" in connection
    assert "MessageModel: CLUSTERING" in connection
    assert "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET" in connection

    progress = rows(online["consumerProgress"], "#Topic")
    assert {int(r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in progress if r[0] == topic} == {
        q: (n, n, 0) for q, n in ends.items()
    }
    assert "Diff Total: 0" in online["consumerProgress"]

    found = key_values(online["queryMsgById"], ": ")
    assert found["OffsetID"] == probe.offset_msg_id
    assert found["Topic"] == topic
    assert (found["Tags"], found["Keys"]) == ("[TagB]", "[key-b1]")
    assert (int(found["Queue ID"]), int(found["Queue Offset"])) == (
        probe.message_queue.queue_id,
        probe.queue_offset,
    )
    assert f"UNIQ_KEY={probe.msg_id}" in found["Properties"]
    # The tool writes the body to a file of its own under /tmp/rocketmq (a fixed path): check
    # it holds the body sent, then remove it.
    body_file = Path(found["Message Body Path"])
    assert body_file.read_bytes() == b"b1"
    body_file.unlink()
    with contextlib.suppress(OSError):
        os.removedirs(body_file.parent)  # the tool's directories, only if now empty
    assert re.search(rf"consumerGroup={group}, trackType=CONSUMED\b", online["queryMsgById"])

    (hit,) = rows(online["queryMsgByKey"], "#Message ID")
    assert hit == [probe.msg_id, str(probe.message_queue.queue_id), str(probe.queue_offset)]

    # The group offline: the reset by time goes mqadmin's own way (it commits the offsets).
    offline = await asyncio.to_thread(
        mqadmin,
        tools,
        ns,
        ["resetOffsetByTime", "-g", group, "-t", topic, "-s", str(between_ms)],
        ["consumerProgress", "-g", group],
        ["deleteTopic", "-c", cluster.config.broker_cluster_name, "-t", new_topic],
        ["topicList"],
    )
    later = per_queue(second)
    expected = {q: (min(later[q]) if later[q] else ends[q]) for q in range(QUEUES)}
    rollback = rows(offline["resetOffsetByTime"], "#brokerName")
    assert {int(r[1]): int(r[5]) for r in rollback} == expected
    assert {q: broker.offsets.query(group, topic, q) for q in range(QUEUES)} == expected
    progress = rows(offline["consumerProgress"], "#Topic")
    assert {int(r[2]): int(r[4]) for r in progress if r[0] == topic} == expected
    assert f"Diff Total: {len(second)}" in offline["consumerProgress"]

    assert f"delete topic [{new_topic}] from NameServer success." in offline["deleteTopic"]
    assert broker.topics.get(new_topic) is None
    assert new_topic not in offline["topicList"].split()
    assert topic in offline["topicList"].split()
