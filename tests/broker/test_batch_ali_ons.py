"""ali-ons reads what a batch stored: messages sent by Longboat's producer as one
SEND_BATCH_MESSAGE (property bytes kept, the broker's appended) reach an unmodified ali-ons
push consumer intact, filtered by tag."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from conftest import Cluster
from longboat.client import Message
from longboat.client.producer import Producer
from peers.ali_ons import start_node_peer

from .test_interop_ali_ons import consumer_args, create_topic, pytestmark  # noqa: F401


async def test_ali_ons_consumes_a_batch_sent_by_longboat_by_tag(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    namesrv, topic, group = cluster.namesrv_addr, "AliOnsBatch", "ali-ons-batch-group"
    await create_topic(cluster, topic)
    batch = [
        Message(topic, f"batch-{i}".encode(), tags="TagA" if i % 2 else "TagB", keys=f"k{i}")
        for i in range(12)
    ]
    args = consumer_args(namesrv, topic, group, "--tags", "TagA", "--expect", "6")
    with start_node_peer("consume.js", *args, "--timeout-ms", "60000") as consumer:
        await asyncio.to_thread(consumer.wait_for, "ready", 40)
        producer = Producer("batch-pg", namesrv_addrs=namesrv)
        await producer.start()
        try:
            result = await producer.send_batch(batch)
        finally:
            await producer.shutdown()
        events = await asyncio.to_thread(consumer.wait, 60)
    got = [e for e in events if e["event"] == "msg"]
    assert sorted(e["body"] for e in got) == sorted(f"batch-{i}" for i in range(1, 12, 2))
    assert {e["tags"] for e in got} == {"TagA"}
    assert {e["queueId"] for e in got} == {result.message_queue.queue_id}
