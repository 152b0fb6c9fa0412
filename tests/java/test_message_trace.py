"""Message traces written by Apache RocketMQ's Java client (4.9.8, `enableMsgTrace=true`, a
custom trace topic), found as `mqadmin QueryMsgTraceById` finds them — the same against
Longboat and against Apache RocketMQ 4.9.7.

One scenario for both brokers, set up with RocketMQ's own keys (`traceTopicEnable`,
`msgTraceTopicName`, `regionId`, `traceOn`): a producer sends two messages, a push consumer
fails each first delivery (so every message has two delivery attempts), a transactional
producer commits one message.  mqadmin prints the Pub row and each group's Sub rows; the raw
records (read with Longboat's admin client) add SubBefore and the EndTransaction record.  And
Longboat's own client's records (`enable_trace=True`) are read by mqadmin as Java's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from client.client_e2e import unique
from client.test_tracing_e2e import traced_round_trip
from conftest import Cluster
from longboat.client.admin import Admin
from longboat.client.tracing.timeline import trace_entries
from peers.rocketmq import discard, run_java_peer, start_rocketmq

pytestmark = pytest.mark.java

REGION = "TraceRegion"


def trace_settings(trace_topic: str) -> dict[str, str]:
    """The broker.conf keys of the scenario, RocketMQ's names."""
    return {
        "traceTopicEnable": "true",
        "msgTraceTopicName": trace_topic,
        "regionId": REGION,
        "traceOn": "true",
    }


def query_traces(ns: str, msg_ids: list[str], trace_topic: str) -> list[str]:
    """What `mqadmin queryMsgTraceById` prints for each of `msg_ids`, in that order (one JVM
    for all of them)."""
    events = run_java_peer(
        "MqAdmin",
        namesrv=ns,
        commands=json.dumps([["queryMsgTraceById", "-i", i, "-t", trace_topic] for i in msg_ids]),
        timeout_ms=60000,
        timeout=90,
    )
    commands = [e for e in events if e["event"] == "command"]
    assert len(commands) == len(msg_ids), events
    for command in commands:
        assert command["stderr"] == "", command["stderr"]
    return [str(command["stdout"]) for command in commands]


def trace_rows(text: str) -> list[list[str]]:
    """mqadmin's rows (not its headers): `Pub GROUP HOST DATE TIME COSTms STATUS`, `Sub ...`."""
    return [line.split() for line in text.splitlines() if line.startswith(("Pub ", "Sub "))]


async def scenario(ns: str, trace_topic: str) -> dict[str, Any]:
    """Run the scenario against the cluster of name server `ns`; what it shows, free of ids,
    times and hosts, so two brokers' results compare equal."""
    topic, group, producer = unique("Traced"), unique("trace_g"), unique("trace_pg")
    async with Admin(namesrv_addrs=ns) as admin:
        # traceTopicEnable: the trace topic exists before any trace is written, one queue.
        route = await admin.route(trace_topic)
        assert sum(q.write_queue_nums for q in route.queue_datas) == 1
        await admin.create_topic(topic, queue_nums=2)
    common: dict[str, Any] = {"namesrv": ns, "topic": topic, "trace": trace_topic}
    sent = await asyncio.to_thread(
        run_java_peer,
        "Produce",
        count=2,
        keys="tk",
        # Java's trace writer sends asynchronously and its shutdown does not wait for the
        # answers: time for them before the producer stops.
        linger_ms=2000,
        tags="TagT",
        group=producer,
        timeout_ms=40000,
        timeout=60,
        **common,
    )
    ids = [e["msgId"] for e in sent if e["event"] == "sent"]
    assert len(ids) == 2
    await asyncio.to_thread(
        run_java_peer,
        "PushConsume",
        group=group,
        expect=2,
        fail_first=1,
        linger_ms=3000,
        timeout_ms=90000,
        timeout=120,
        **common,
    )
    tx = await asyncio.to_thread(
        run_java_peer,
        "TransactionProduce",
        decide="commit",
        group=unique("trace_tx"),
        linger_ms=2000,  # as for Produce: the trace writer's last sends
        timeout_ms=40000,
        timeout=60,
        **common,
    )
    (tx_id,) = [e["msgId"] for e in tx if e["event"] == "sent"]

    shown = [
        trace_rows(text) for text in await asyncio.to_thread(query_traces, ns, ids, trace_topic)
    ]
    async with Admin(namesrv_addrs=ns) as admin:
        records = [await trace_entries(admin, i, trace_topic) for i in [*ids, tx_id]]
    return {
        # mqadmin: Pub by the producer's group, then the consumer group's attempts in order.
        "mqadmin": [sorted((row[0], row[1], row[-1]) for row in rows) for rows in shown],
        "records": [
            sorted(
                (
                    e.record.type.value,
                    e.record.group == producer or e.record.group == group,
                    e.record.region_id,
                    e.record.success,
                    e.record.retry_times,
                    e.record.transaction_state,
                )
                for e in entries
            )
            for entries in records
        ],
        "groups": (producer, group),
    }


def expected(producer: str, group: str) -> dict[str, Any]:
    sub = [("Sub", group, "failed"), ("Sub", group, "success")]
    one = [("Pub", producer, "success"), *sub]
    per_message = [
        ("Pub", True, REGION, True, 0, None),
        ("SubAfter", True, None, False, 0, None),
        ("SubAfter", True, None, True, 0, None),
        # A delivery's record takes its region from the message's MSG_REGION, which brokers
        # answer to the producer but do not store.
        ("SubBefore", True, None, True, 0, None),
        ("SubBefore", True, None, True, 1, None),
    ]
    return {
        "mqadmin": [sorted(one), sorted(one)],
        "records": [
            per_message,
            per_message,
            # The transactional message: its half's Pub and the commit (never consumed); the
            # commit's record takes its region from the producer's own copy of the message,
            # which has none, so it is Java's default.
            [
                ("EndTransaction", False, "DefaultRegion", True, 0, "COMMIT_MESSAGE"),
                ("Pub", False, REGION, True, 0, None),
            ],
        ],
        "groups": (producer, group),
    }


def check(got: dict[str, Any]) -> None:
    want = expected(*got["groups"])
    assert got["mqadmin"] == want["mqadmin"]
    for records, wanted in zip(got["records"], want["records"], strict=True):
        assert records == wanted


async def test_java_traces_on_longboat_are_found_by_mqadmin(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    trace_topic = unique("TraceTopic")
    cluster = loopback_cluster(
        trace_topic_enable=True, msg_trace_topic_name=trace_topic, region_id=REGION, trace_on=True
    )
    got = await scenario(cluster.namesrv_addr, trace_topic)
    check(got)


async def test_java_traces_on_rocketmq_read_the_same(java_peers: None, tmp_path: Path) -> None:
    trace_topic = unique("TraceTopic")
    rocketmq = start_rocketmq(tmp_path / "rocketmq", broker_options=trace_settings(trace_topic))
    try:
        got = await scenario(rocketmq.namesrv_addr, trace_topic)
    finally:
        discard(rocketmq)
    check(got)


async def test_python_traces_are_found_by_mqadmin(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    """Longboat's client (`enable_trace=True`) writes records mqadmin reads as Java's."""
    trace_topic = unique("PyTraceTopic")
    cluster = loopback_cluster(
        trace_topic_enable=True, msg_trace_topic_name=trace_topic, region_id=REGION
    )
    ns = cluster.namesrv_addr
    ids, producer, group = await traced_round_trip(ns, trace_topic, [b"from-python"])
    (text,) = await asyncio.to_thread(query_traces, ns, ids[:1], trace_topic)
    shown = trace_rows(text)
    assert sorted((row[0], row[1], row[-1]) for row in shown) == [
        ("Pub", producer, "success"),
        ("Sub", group, "failed"),
        ("Sub", group, "success"),
    ]
