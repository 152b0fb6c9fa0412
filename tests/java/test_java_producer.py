"""Apache RocketMQ's DefaultMQProducer (4.9.8), unchanged, against Longboat: every send mode.

Each scenario runs the Java peer `Produce` against a Longboat broker and reads the topic back
with Longboat's own lite pull consumer, so what is checked is what the broker stored.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from client.client_e2e import config_for, read_topic, unique
from conftest import Cluster
from longboat.client.admin import Admin
from longboat.protocol.sysflags import MessageSysFlag
from peers.rocketmq import run_java_peer

pytestmark = pytest.mark.java


def sent_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "sent"]


async def test_sync_async_oneway_batch_and_ordered_sends_arrive_intact(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster().namesrv_addr
    topic = unique("JavaModes")
    modes = ["sync", "async", "oneway", "batch", "ordered"]
    events = run_java_peer(
        "Produce",
        namesrv=ns,
        topic=topic,
        mode=",".join(modes),
        count=12,
        shard_keys=3,
        tags="TagA,TagB",
        keys="key",
        props="color=blue,size=9",
        timeout_ms=40000,
        timeout=60,
    )
    sent = sent_events(events)
    assert len(sent) == 12 * len(modes)
    assert {e["sendStatus"] for e in sent if e["mode"] != "oneway"} == {"SEND_OK"}

    got = await read_topic(ns, topic, 12 * len(modes))
    by_body = {m.body.decode(): m for m in got}
    assert sorted(by_body) == sorted(f"{mode}-{i}" for mode in modes for i in range(12))
    assert len(got) == len(by_body), "a message was stored twice"
    for body, msg in by_body.items():
        i = int(body.rsplit("-", 1)[1])
        assert msg.tags == ["TagA", "TagB"][i % 2]
        assert msg.keys == f"key-{i}"
        assert msg.properties["color"] == "blue"
    # What the producer was told is where the message is.
    for e in sent:
        if e["mode"] == "oneway":
            continue
        msg = by_body[f"{e['mode']}-{e['i']}"]
        assert (msg.queue_id, msg.queue_offset) == (e["queueId"], e["queueOffset"])
        assert msg.msg_id == e["msgId"]
        assert msg.offset_msg_id == e["offsetMsgId"]

    # MessageQueueSelector: each sharding key on the queue it chose, in send order.
    ordered = [m for m in got if m.body.startswith(b"ordered-")]
    per_queue: dict[int, list[int]] = defaultdict(list)
    for m in sorted(ordered, key=lambda m: (m.queue_id, m.queue_offset)):
        per_queue[m.queue_id].append(int(m.body.decode().rsplit("-", 1)[1]))
    chosen = {e["shardKey"]: e["queueId"] for e in sent if e["mode"] == "ordered"}
    for key, queue_id in chosen.items():
        of_key = [i for i in per_queue[queue_id] if f"k{i % 3}" == key]
        assert of_key == sorted(of_key) and len(of_key) == 4


async def test_bodies_over_4_kib_are_compressed_and_read_back_intact(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster().namesrv_addr
    topic = unique("JavaBig")
    run_java_peer(
        "Produce", namesrv=ns, topic=topic, count=3, body_size=20000, timeout_ms=40000, timeout=60
    )
    got = await read_topic(ns, topic, 3)
    assert len(got) == 3
    for msg in got:
        assert len(msg.body) == 20000 and msg.body.startswith(b"sync-")
        # The client compressed it; the broker kept its bytes and flag as sent.
        assert msg.sys_flag & MessageSysFlag.COMPRESSED
    assert len(zlib.compress(got[0].body)) < 20000


async def test_delay_level_holds_the_message_back(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster(message_delay_level="100ms 100ms 2s").namesrv_addr
    topic = unique("JavaDelay")
    events = run_java_peer(
        "Produce", namesrv=ns, topic=topic, delay_level=3, timeout_ms=40000, timeout=60
    )
    [sent] = sent_events(events)
    [msg] = await read_topic(ns, topic, 1, timeout=30)
    assert msg.body == b"sync-0"
    assert msg.msg_id == sent["msgId"]
    # Stored to the topic by the schedule service once level 3 (2 s) had passed.
    assert msg.store_timestamp - msg.born_timestamp >= 1900


async def test_new_topic_with_auto_create_on_and_off(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    auto = loopback_cluster().namesrv_addr
    topic = unique("JavaAuto")
    run_java_peer("Produce", namesrv=auto, topic=topic, timeout_ms=40000, timeout=60)
    [msg] = await read_topic(auto, topic, 1)
    assert msg.body == b"sync-0"

    strict = loopback_cluster(auto_create_topic=False).namesrv_addr
    refused = run_java_peer(
        "Produce", namesrv=strict, topic=topic, timeout_ms=40000, timeout=60, check=False
    )
    [error] = [e for e in refused if e["event"] == "error"]
    assert "No route info of this topic" in error["message"]
    assert not sent_events(refused)

    async with Admin(config=config_for(strict)) as admin:
        await admin.create_topic(topic, queue_nums=2)
    run_java_peer("Produce", namesrv=strict, topic=topic, timeout_ms=40000, timeout=60)
    [msg] = await read_topic(strict, topic, 1)
    assert msg.body == b"sync-0"
