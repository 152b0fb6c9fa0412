"""The broker's Prometheus endpoint, scraped over HTTP on 127.0.0.1 while real clients work."""

from __future__ import annotations

import asyncio
import socket
import time
import urllib.request
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from longboat.broker import BrokerConfig, BrokerController
from longboat.client import ClientConfig, Message
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.protocol.message import MessageExt
from longboat.store import MessageInner

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def client_config(namesrv: str, name: str) -> ClientConfig:
    return ClientConfig([namesrv], client_ip="127.0.0.1", instance_name=name)


async def test_scrape_counts_traffic_holds_lag_and_dlq(loopback_cluster) -> None:
    port = free_port()
    cluster = loopback_cluster(metrics_port=port)
    broker = cluster.broker
    assert broker.metrics is not None and broker.metrics.port == port
    topic, group = "MetricsT", "metrics_group"
    cfg = client_config(cluster.namesrv_addr, "metrics-test")
    async with Admin(config=cfg) as admin:
        await admin.create_topic(topic, queue_nums=1)

    async with Producer("metrics_pg", config=client_config(cluster.namesrv_addr, "p")) as producer:
        for i in range(3):
            await producer.send(Message(topic, f"single-{i}".encode()))
        await producer.send_batch([Message(topic, b"x" * 100) for _ in range(4)])

    samples = scrape(port)
    assert value(samples, "longboat_messages_in_total", topic=topic) == 7
    assert value(samples, "longboat_bytes_in_total", topic=topic) > 400
    assert value(samples, "longboat_store_size_bytes") > 0
    # The key index of a send is written within a millisecond of its answer (`defer_indexing`):
    # at rest, nothing is behind.
    await wait_for(lambda: value(scrape(port), "longboat_dispatch_lag_bytes") == 0)
    # The same figures under RocketMQ 5's names and labels.
    node = {"cluster": cluster.config.broker_cluster_name, "node_type": "broker"}
    node["node_id"] = cluster.config.broker_name
    sent = {**node, "topic": topic, "message_type": "normal", "is_system": "false"}
    assert value(samples, "rocketmq_messages_in_total", **sent) == 7
    assert value(samples, "rocketmq_throughput_in_total", **sent) == value(
        samples, "longboat_bytes_in_total", topic=topic
    )
    storage = {**node, "storage_type": "local", "storage_medium": "disk"}
    assert value(samples, "rocketmq_storage_size", **storage) == value(
        samples, "longboat_store_size_bytes"
    )

    consumer = LitePullConsumer(
        group,
        config=client_config(cluster.namesrv_addr, "c"),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        auto_commit=False,
    )
    async with consumer:
        [mq] = await consumer.fetch_message_queues(topic)
        consumer.assign([mq])
        got: list[MessageExt] = []
        while len(got) < 7:
            got += await consumer.poll(timeout=5)
        await consumer.commit({mq: 2})
        # Everything read: the consumer's next pull is parked; an arrival wakes it.
        await wait_for(lambda: broker.hold.held_count >= 1)
        assert value(scrape(port), "longboat_held_pulls", kind="pull") >= 1
        async with Producer("metrics_pg2", config=client_config(cluster.namesrv_addr, "p2")) as p:
            await p.send(Message(topic, b"wake"))
        woken = await consumer.poll(timeout=5)
        assert [m.body for m in woken] == [b"wake"]

    samples = scrape(port)
    assert value(samples, "longboat_messages_out_total", topic=topic) == 8
    assert value(samples, "longboat_bytes_out_total", topic=topic) > 400
    assert value(samples, "longboat_pull_wakeups_total", kind="pull") >= 1
    assert value(samples, "longboat_pull_wakeup_latency_seconds_count") >= 1
    queue = {"group": group, "topic": topic, "queue": "0"}
    assert value(samples, "longboat_consumer_lag_messages", **queue) == 8 - 2
    assert value(samples, "longboat_consumer_lag_seconds", **queue) >= 0
    assert ("longboat_consumer_lag_seconds", tuple(sorted(queue.items()))) in samples
    pulled = {**node, "topic": topic, "is_retry": "false", "is_system": "false"}
    assert value(samples, "rocketmq_messages_out_total", **pulled) == 8
    assert value(samples, "rocketmq_throughput_out_total", **pulled) > 400
    of_group = {**pulled, "consumer_group": group}
    assert value(samples, "rocketmq_consumer_lag_messages", **of_group) == 8 - 2
    assert value(samples, "rocketmq_consumer_ready_messages", **of_group) == 8 - 2
    assert value(samples, "rocketmq_consumer_inflight_messages", **of_group) == 0
    assert ("rocketmq_consumer_lag_latency", tuple(sorted(of_group.items()))) in samples
    # The flush thread syncs on its own schedule (a busy disk can hold one sync for seconds).
    await wait_for(lambda: broker.store.flush_stats[0] >= 1, timeout=60)
    assert value(scrape(port), "longboat_flush_latency_seconds_count") >= 1

    # Retry and DLQ arrivals are counted per group, whoever stored them.
    for dest in ("%RETRY%g1", "%RETRY%g1", "%DLQ%g1"):
        cluster.runner.run(
            broker.put_message(MessageInner(topic=dest, queue_id=0, body=b"r", properties={}))
        )
    samples = scrape(port)
    assert value(samples, "longboat_retry_messages_total", group="g1") == 2
    assert value(samples, "longboat_dlq_messages_total", group="g1") == 1
    dlq = {**node, "consumer_group": "g1", "is_system": "false"}
    assert value(samples, "rocketmq_send_to_dlq_messages_total", **dlq) == 1


async def test_endpoint_is_off_by_default_and_stops_with_the_broker(loopback_cluster) -> None:
    cluster = loopback_cluster()
    assert cluster.broker.metrics is None
    port = free_port()
    config = cluster.config.updated(
        metrics_port=port, listen_port=0, store_path_root_dir=cluster.data_dir / "second"
    )
    broker = BrokerController(config)
    cluster.runner.run(broker.start())
    try:
        assert value(scrape(port), "longboat_held_pulls") == 0
    finally:
        cluster.runner.run(broker.stop())
    with pytest.raises(OSError):
        scrape(port)


def test_a_taken_port_fails_the_start_naming_the_setting(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = BrokerConfig(
            listen_host="127.0.0.1",
            listen_port=0,
            broker_ip1="127.0.0.1",
            store_path_root_dir=tmp_path,
            metrics_port=port,
            grpc_listen_port=-1,
        )
        broker = BrokerController(config)
        with pytest.raises(OSError, match="metricsPort"):
            asyncio.run(broker.start())
