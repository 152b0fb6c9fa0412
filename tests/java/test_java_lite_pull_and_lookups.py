"""Apache RocketMQ's DefaultLitePullConsumer and message lookups (4.9.8), unchanged, against
Longboat: assign + seek + commitSync, subscribe; viewMessage by offset message id and by
UNIQ_KEY, queryMessage by key within a time range."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from client.client_e2e import config_for, unique
from client.push_support import create_topic
from conftest import Cluster
from longboat.client import Message
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.client.selector import QueueSelector
from longboat.protocol.types import MessageQueue
from peers.rocketmq import run_java_peer

pytestmark = pytest.mark.java


def of(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name]


def queue_number(q: int) -> QueueSelector:
    """A selector that picks the q-th queue of the route."""
    return lambda queues, _msg, _arg: queues[q]


async def fill_queues(ns: str, topic: str, per_queue: int, queues: int) -> None:
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for q in range(queues):
            for i in range(per_queue):
                await producer.send(Message(topic, f"q{q}-{i}".encode()), selector=queue_number(q))


async def test_lite_pull_assign_seek_commit_sync_and_subscribe(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    cluster = loopback_cluster()
    ns = cluster.namesrv_addr
    topic = await create_topic(ns, queues=2)
    await fill_queues(ns, topic, per_queue=10, queues=2)
    group = unique("lite")
    events = run_java_peer(
        "LitePull",
        namesrv=ns,
        topic=topic,
        group=group,
        seek="0:4,1:7",
        expect=9,
        timeout_ms=40000,
        timeout=60,
    )
    assert of(events, "assigned")[0]["queues"] == [0, 1]
    got = sorted((e["queueId"], e["queueOffset"], e["body"]) for e in of(events, "msg"))
    assert got == [(0, o, f"q0-{o}") for o in range(4, 10)] + [(1, o, f"q1-{o}") for o in (7, 8, 9)]
    [committed] = of(events, "committed")
    assert committed["offsets"] == {"0": 10, "1": 10}
    # The commit is the broker's, not the client's: Longboat's consumer of the group sees it.
    async with LitePullConsumer(group, config=config_for(ns)) as reader:
        for q in (0, 1):
            mq = MessageQueue(topic, cluster.config.broker_name, q)
            assert await reader.committed(mq) == 10

    events = run_java_peer(
        "LitePull",
        namesrv=ns,
        topic=topic,
        group=unique("sub"),
        mode="subscribe",
        expect=20,
        timeout_ms=40000,
        timeout=60,
    )
    bodies = sorted(e["body"] for e in of(events, "msg"))
    assert bodies == sorted(f"q{q}-{i}" for q in (0, 1) for i in range(10))


async def test_view_message_by_ids_and_query_by_key_and_time(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster().namesrv_addr
    topic = unique("JavaLookup")

    def produce(body: str) -> list[dict[str, Any]]:
        events = run_java_peer(
            "Produce",
            namesrv=ns,
            topic=topic,
            count=2,
            keys="lk",
            body=body,
            timeout_ms=40000,
            timeout=60,
        )
        return of(events, "sent")

    early = produce("early")
    await asyncio.sleep(0.5)
    middle_ms = int(time.time() * 1000)
    await asyncio.sleep(0.5)
    late = produce("late")
    sent = early + late

    events = run_java_peer(
        "Lookup",
        namesrv=ns,
        topic=topic,
        offset_ids=",".join(e["offsetMsgId"] for e in sent),
        uniq_ids=",".join(e["msgId"] for e in sent),
        query_keys=f"lk-0,lk-1@{middle_ms}:{middle_ms + 60_000},lk-0@0:{middle_ms},nokey",
        timeout_ms=40000,
        timeout=60,
    )
    viewed = of(events, "viewed")
    by_offset = {e["id"]: e["message"] for e in viewed if e["by"] == "offsetMsgId"}
    by_uniq = {e["id"]: e["message"] for e in viewed if e["by"] == "uniqKey"}
    for e in sent:
        body = "early" if e in early else "late"
        for msg in (by_offset[e["offsetMsgId"]], by_uniq[e["msgId"]]):
            assert (msg["topic"], msg["body"], msg["keys"]) == (topic, body, f"lk-{e['i']}")
            assert (msg["queueId"], msg["queueOffset"]) == (e["queueId"], e["queueOffset"])
            assert msg["msgId"] == e["msgId"]

    everything, lk1_after_middle, lk0_before_middle = (
        sorted(m["body"] for m in q["messages"]) for q in of(events, "queried")
    )
    assert everything == ["early", "late"]
    assert lk1_after_middle == ["late"]
    assert lk0_before_middle == ["early"]
    # A key nothing was sent under: the client's "no message" error, as from RocketMQ.
    assert [e["id"] for e in of(events, "lookup_error")] == ["nokey"]
