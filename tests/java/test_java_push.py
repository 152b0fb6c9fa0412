"""Apache RocketMQ's DefaultMQPushConsumer (4.9.8), unchanged, against Longboat.

CLUSTERING with MessageListenerConcurrently (tag expressions, RECONSUME_LATER through %RETRY%
to %DLQ%, where a new group starts), MessageListenerOrderly while members come and go, and
BROADCASTING. Messages are sent by Longboat's producer; the Java peer `PushConsume` reports
every delivery.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from client.client_e2e import read_topic, unique
from client.conftest import SHORT_DELAY_LEVELS
from client.push_support import create_topic, send
from conftest import Cluster
from longboat.protocol.topic_names import DLQ_GROUP_TOPIC_PREFIX
from peers.process import PeerProcess
from peers.rocketmq import start_java_peer

pytestmark = pytest.mark.java


def deliveries(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "msg"]


def consumer(ns: str, topic: str, group: str, **options: object) -> PeerProcess:
    """A Java push consumer that gives up (exit 3) after timeout_ms (default 60 s) of its life."""
    options.setdefault("timeout_ms", 60000)
    return start_java_peer("PushConsume", namesrv=ns, topic=topic, group=group, **options)


async def test_concurrently_with_a_tag_expression(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster().namesrv_addr
    topic = await create_topic(ns, queues=4)
    for tag in "ABC":
        await send(ns, topic, [f"{tag}{i}" for i in range(4)], tags=tag)
    with consumer(ns, topic, unique("g"), tags="A || B", expect=8, linger_ms=1500) as c:
        events = await asyncio.to_thread(c.wait, 90)
    got = deliveries(events)
    assert sorted(e["body"] for e in got) == sorted(f"{t}{i}" for t in "AB" for i in range(4))
    assert {e["tags"] for e in got} == {"A", "B"}
    assert all(e["keys"] == e["body"] for e in got)


async def test_reconsume_later_goes_through_retry_to_dlq(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster(message_delay_level=SHORT_DELAY_LEVELS).namesrv_addr
    topic = await create_topic(ns, queues=2)
    group = unique("g")
    await send(ns, topic, ["dead-1", "dead-2"])
    # Every delivery fails; maxReconsumeTimes 2 allows two retries, then the dead-letter queue.
    with consumer(
        ns, topic, group, fail_first=100, max_reconsume=2, until_deliveries=6, linger_ms=2000
    ) as c:
        events = await asyncio.to_thread(c.wait, 90)
    got = deliveries(events)
    per_body: dict[str, list[int]] = defaultdict(list)
    for e in got:
        per_body[e["body"]].append(e["reconsumeTimes"])
        assert e["topic"] == topic  # the client restores the topic of a %RETRY% copy
    assert {b: sorted(t) for b, t in per_body.items()} == {"dead-1": [0, 1, 2], "dead-2": [0, 1, 2]}
    # Retried copies came from %RETRY%<group> and name their original topic.
    assert {e["properties"].get("RETRY_TOPIC") for e in got if e["reconsumeTimes"]} == {topic}
    dead = await read_topic(ns, f"{DLQ_GROUP_TOPIC_PREFIX}{group}", 2)
    assert sorted(m.body for m in dead) == [b"dead-1", b"dead-2"]
    # The dead letter counts the failed delivery too (reconsumeTimes + 1), as RocketMQ's does.
    assert {m.reconsume_times for m in dead} == {3}


async def test_consume_from_first_last_and_timestamp_for_a_new_group(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    """Where a queue's head is still stored a new group starts at 0 whatever it asks (RocketMQ
    4.x brokers answer QUERY_CONSUMER_OFFSET with 0 then); once retention has deleted it, the
    client's consumeFromWhere decides, as RocketMQ's does."""
    cluster = loopback_cluster(mapped_file_size_commit_log=4096, file_reserved_time=0.0)
    ns = cluster.namesrv_addr
    topic = await create_topic(ns, queues=1)
    await send(ns, topic, [f"old{i:02}" + "x" * 200 for i in range(60)])

    async def expire() -> int:
        cluster.broker.store.flush()
        return cluster.broker.store.delete_expired(force=True)

    assert cluster.runner.run(expire()) > 0
    retained = {m.body.decode() for m in await read_topic(ns, topic, 60, timeout=3)}
    assert 0 < len(retained) < 60
    await send(ns, topic, [f"mid{i}" for i in range(3)])
    # consumeTimestamp has whole seconds: mid before the chosen second, new from it on.
    await asyncio.sleep(1.05 - time.time() % 1)
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime())
    await asyncio.sleep(0.05)
    await send(ns, topic, [f"new{i}" for i in range(3)])

    late = [f"late{i}" for i in range(3)]
    expected = {
        "first": retained | {f"mid{i}" for i in range(3)} | {f"new{i}" for i in range(3)},
        "last": set(),
        "timestamp": {f"new{i}" for i in range(3)},
    }
    peers = {
        where: consumer(
            ns,
            topic,
            unique(where),
            expect=len(expected[where]) + 3,
            linger_ms=1500,
            **{"from": where, "timestamp": stamp if where == "timestamp" else None},
        )
        for where in expected
    }
    try:
        for peer in peers.values():
            await asyncio.to_thread(peer.wait_for, "ready", 60)
        # "ready" means the client put the queue in its table, which it does only after it
        # computed where to start: the late messages come after the last-offset group's start.
        await send(ns, topic, late)
        for where, peer in peers.items():
            events = await asyncio.to_thread(peer.wait, 90)
            got = {e["body"] for e in deliveries(events)}
            assert got == expected[where] | set(late), where
    finally:
        for peer in peers.values():
            peer.__exit__()


def consume_together(first: PeerProcess, second: PeerProcess, timeout: float = 60) -> None:
    """Wait for the second member's first delivery, then for one of the first member's at
    or after it: both members are consuming at once."""
    joined = next(e for e in second.events(timeout) if e["event"] == "msg")
    for e in first.events(timeout):
        if e["event"] == "msg" and e["deliveredAt"] >= joined["deliveredAt"]:
            return
    raise AssertionError("the first member stopped consuming once the second joined")


async def test_orderly_keeps_order_per_key_while_members_join_and_leave(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster().namesrv_addr
    topic = await create_topic(ns, queues=4, order=True)
    group = unique("orderly")
    keys = [f"key{k}" for k in range(8)]
    produced: list[str] = []
    stop_producing = asyncio.Event()

    async def produce() -> None:
        # Rounds of one message per key, sent while the membership changes.
        seq = 0
        while not stop_producing.is_set():
            bodies = [f"{key}:{seq:04}" for key in keys]
            await send(ns, topic, bodies, sharding=lambda body: body.split(":")[0])
            produced.extend(bodies)
            seq += 1
            await asyncio.sleep(0.05)

    def member(name: str) -> PeerProcess:
        # A member lives through the other's start and stop (each waited for up to 60 s and
        # 30 s on a busy machine), so its own deadline covers them all.
        return consumer(
            ns, topic, group, timeout_ms=180_000, listener="orderly", consume_ms=5, instance=name
        )

    with member("first") as first:
        await asyncio.to_thread(first.wait_for, "ready", 60)
        producing = asyncio.create_task(produce())
        with member("second") as second:
            await asyncio.to_thread(second.wait_for, "ready", 60)
            await asyncio.to_thread(consume_together, first, second)
            first_events = await asyncio.to_thread(first.stop, 30)
            await asyncio.sleep(1.0)  # the second alone
            stop_producing.set()
            await producing

            def missing() -> set[str]:
                return set(produced) - {e["body"] for e in deliveries(first_events + second.seen)}

            for _ in second.events(timeout=60):
                if not missing():
                    break
            second_events = await asyncio.to_thread(second.stop, 30)

    runs = {"first": deliveries(first_events), "second": deliveries(second_events)}
    assert runs["first"] and runs["second"], "both members consumed"
    # The members overlapped (each on its own queues), not a plain hand-over.
    assert min(e["deliveredAt"] for e in runs["second"]) <= max(
        e["deliveredAt"] for e in runs["first"]
    ), "the second member consumed only after the first had stopped"
    assert not missing()
    per_member: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name, run in runs.items():
        per_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in run:
            per_key[e["body"].split(":")[0]].append(e)
        per_member[name] = per_key
        for key, events in per_key.items():
            seqs = [int(e["body"].split(":")[1]) for e in events]
            # One member sees a key's messages in order, each once or replayed from an
            # uncommitted point (never skipping ahead).
            for before, after in itertools.pairwise(seqs):
                assert after == before + 1 or after <= before, (name, key, seqs)
    # A key moves from the first member to the second, never consumed by both at once: the
    # broker's queue lock holds the second off until the first has let go.
    for key, second_events_of_key in per_member["second"].items():
        first_events_of_key = per_member["first"].get(key)
        if first_events_of_key:
            assert first_events_of_key[-1]["deliveredAt"] <= second_events_of_key[0]["deliveredAt"]


async def test_broadcasting_delivers_everything_to_every_member(
    java_peers: None, loopback_cluster: Callable[..., Cluster]
) -> None:
    ns = loopback_cluster().namesrv_addr
    topic = await create_topic(ns, queues=4)
    group = unique("bc")
    bodies = [f"b{i}" for i in range(12)]
    await send(ns, topic, bodies)
    members = [
        consumer(ns, topic, group, model="broadcasting", expect=12, linger_ms=1000, instance=n)
        for n in ("one", "two")
    ]
    try:
        for m in members:
            events = await asyncio.to_thread(m.wait, 90)
            assert sorted(e["body"] for e in deliveries(events)) == sorted(bodies)
    finally:
        for m in members:
            m.__exit__()
