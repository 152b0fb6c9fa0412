"""Differential scenarios: what a user of a cluster can observe, as plain data to compare.

A scenario drives clients against whatever cluster ``namesrv`` names (Longboat's, or Apache
RocketMQ's) and returns a flat mapping, field name -> JSON-able value, of what a user sees:
bodies and their order per queue, properties, send statuses, where a new group starts, what a
lookup finds, and the response code of each refusal. Nothing in it may depend on which system
ran it other than through the system's behaviour: no ids, addresses, broker names or times.
test_differential.py runs each one on both systems and compares field by field; an accepted
difference is a row of the table in docs/compatibility.md.

The clients are Longboat's Python client (bad input goes through its low-level API, the raw
request the producer would send, since the client refuses much of it before the wire) and, over
gRPC, RocketMQ's Java client 5.0.8 (`grpc_java5`, against Longboat's gRPC endpoint and RocketMQ
5's proxy; RocketMQ 4.9.7 has no gRPC), and over remoting RocketMQ's Java client 4.9.8 and 5.3.3
(differential/scenarios_java.py).
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from client.client_e2e import config_for, read_topic, unique
from client.push_support import Deliveries, failing_consumer, positioned
from differential.harness import (
    WAIT_S,
    Observation,
    Scenario,
    Target,
    TopicReader,
    master_addr,
    new_topic,
    outcome,
    positioned_then_send,
    queue_bodies,
    raw_send,
    send_around_a_time,
    subscribed,
)
from differential.scenarios5 import SCENARIOS5
from differential.scenarios_consume import SCENARIOS_CONSUME
from differential.scenarios_grpc import SCENARIOS_GRPC
from differential.scenarios_java import SCENARIOS_JAVA
from longboat.client import Message
from longboat.client.admin import Admin, QueueOffset
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeResult, MessageModel, PushConsumer
from longboat.client.transaction import LocalTransactionState, TransactionProducer
from longboat.protocol.message import MessageExt
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.types import PERM_READ, PERM_WRITE, MessageQueue
from peers.rocketmq import run_java5_peer

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOWN = LocalTransactionState.UNKNOWN

# --- scenarios ---------------------------------------------------------------------------------


async def send_modes(target: Target) -> Observation:
    """Every send mode of the producer, and the messages read back."""
    ns = target.namesrv
    topic = await new_topic(ns, queues=4)
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        sync = await producer.send(
            Message(topic, b"sync", tags="TagS", keys=["k1", "k2"], properties={"color": "blue"})
        )
        async_result = await producer.send_async(Message(topic, b"async", tags="TagA"))
        await producer.send_oneway(Message(topic, b"oneway"))
        batch = await producer.send_batch([Message(topic, b"batch-%d" % i) for i in range(3)])
        ordered = [
            await producer.send(Message(topic, b"order-%d" % i), sharding_key="customer-7")
            for i in range(4)
        ]
        delayed = await producer.send(Message(topic, b"delayed", delay_level=1))
    # Every message sent (11): the read ends as soon as they all came.
    got = {m.body.decode(): m for m in await read_topic(ns, topic, 11, timeout=WAIT_S)}
    ordered_queue = [m for m in got.values() if m.body.startswith(b"order-")]
    return {
        "statuses": [r.status.name for r in (sync, async_result, batch, *ordered, delayed)],
        "bodies": sorted(got),
        "batch.offset_ids": batch.offset_msg_id.count(",") + 1,
        "batch.one_queue_consecutive": [got[f"batch-{i}"].queue_offset for i in range(3)]
        == [batch.queue_offset + i for i in range(3)],
        "ordered.one_queue": len({r.message_queue for r in ordered}) == 1,
        "ordered.order": queue_bodies(ordered_queue),
        "sync.tags": got["sync"].tags,
        "sync.keys": got["sync"].keys,
        "sync.color": got["sync"].properties.get("color"),
        "sync.msg_id_is_uniq_key": got["sync"].msg_id == sync.msg_id,
        "sync.reconsume_times": got["sync"].reconsume_times,
        "delayed.held_a_second": got["delayed"].store_timestamp - got["delayed"].born_timestamp
        >= 900,
        "delayed.delay_property": got["delayed"].properties.get("DELAY"),
    }


async def tag_filters(target: Target) -> Observation:
    """A group subscribed by tag expression gets exactly the matching messages, in order."""
    ns = target.namesrv
    topic = await new_topic(ns)
    sent = [("a1", "A"), ("b1", "B"), ("none", None), ("c1", "C"), ("a2", "A"), ("end", "A")]
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for body, tag in sent:
            await producer.send(Message(topic, body.encode(), tags=tag))
    # Labelled without "|", which a Markdown table cell cannot hold as it is.
    expressions = {"A or C": "A || C", "all": "*", "B": "B", "A or B, spaced": " A||B "}
    return {
        f"subscribed to {label}": await subscribed(
            ns, topic, "end" if "A" in expression or expression == "*" else "b1", expression
        )
        for label, expression in expressions.items()
    }


async def sql_filters(target: Target) -> Observation:
    """A group subscribed by SQL92 selector (`enablePropertyFilter=true` on every broker)."""
    ns = target.namesrv
    topic = await new_topic(ns)
    sent: list[tuple[str, str | None, dict[str, str]]] = [
        ("n1-red", "X", {"n": "1", "color": "red"}),
        ("n5-blue", "X", {"n": "5", "color": "blue"}),
        ("n7-none", "Y", {"n": "7"}),
        ("n-abc", "X", {"n": "abc", "color": "red"}),
        ("n9-red", None, {"n": "9", "color": "red"}),
        ("end", "X", {"n": "100", "color": "red", "last": "yes"}),
    ]
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for body, tag, props in sent:
            await producer.send(Message(topic, body.encode(), tags=tag, properties=props))
    selectors = [
        "n > 4",
        "color = 'red' AND TAGS = 'X'",
        "color IS NULL OR last = 'yes'",
        "n BETWEEN 1 AND 6 OR last IS NOT NULL",
        "color IN ('blue', 'green') OR n = 100",
    ]
    return {
        f"selected by {selector}": await subscribed(ns, topic, "end", sql=selector)
        for selector in selectors
    }


async def bad_input(target: Target) -> Observation:
    """The answer to each kind of request a broker or name server must refuse."""
    ns = target.namesrv
    seen: Observation = {}
    async with Admin(config=config_for(ns)) as admin:
        api = admin.instance.api
        _, addr = await master_addr(admin)
        readable = await new_topic(ns, perm=PERM_READ)
        writable = await new_topic(ns, perm=PERM_WRITE)
        seen["send: illegal topic name"] = await outcome(raw_send(admin, "bad topic!", b"x"))
        seen["send: topic name of 128 characters"] = await outcome(raw_send(admin, "T" * 128, b"x"))
        seen["send: to a system topic"] = await outcome(
            raw_send(admin, "SCHEDULE_TOPIC_XXXX", b"x")
        )
        body = random.Random(7).randbytes(4 * 1024 * 1024 + 1)  # incompressible
        seen["send: body over 4 MiB"] = await outcome(raw_send(admin, await new_topic(ns), body))
        seen["send: to a read-only topic"] = await outcome(
            raw_send(admin, readable, b"x"), readable
        )
        seen["send: to queue 9 of a 1-queue topic"] = await outcome(
            raw_send(admin, await new_topic(ns), b"x", queue_id=9)
        )
        seen["send: properties over 32 KiB"] = await outcome(
            raw_send(admin, await new_topic(ns), b"x", properties={"big": "p" * 33_000})
        )
        missing = unique("NoSuchTopic")
        seen["route of an unknown topic"] = await outcome(api.get_route(missing), missing)
        pull_group = unique("pull_g")
        seen["pull: unknown topic"] = await outcome(
            api.pull(
                addr, MessageQueue(missing, "", 0), 0, group=pull_group, max_msgs=1, timeout=5
            ),
            missing,
        )
        seen["pull: write-only topic"] = await outcome(
            api.pull(
                addr, MessageQueue(writable, "", 0), 0, group=pull_group, max_msgs=1, timeout=5
            ),
            writable,
        )
        unknown_group = unique("never_seen_g")
        seen["consume stats of an unknown group"] = await outcome(
            api.get_consume_stats(addr, unknown_group), unknown_group
        )
        seen["offset of a group that never committed"] = await api.query_consumer_offset(
            addr, unknown_group, MessageQueue(writable, "", 0), set_zero_if_not_found=False
        )
    return seen


async def retries_to_dlq(target: Target) -> Observation:
    """A push consumer's failed messages: reconsumed through the group's retry topic (delay
    levels of 1 s) up to `max_reconsume_times`, then stored in its dead-letter topic.

    -1 is the default, in Longboat's client as in RocketMQ's Java client: both send 16 for
    it, which both brokers take as any other limit. 0 dead-letters a message at its first
    failure (`reconsumeTimes >= maxReconsumeTimes`)."""
    ns = target.namesrv
    seen: Observation = {}
    # Each limit has a topic and group of its own: the three wait on their retries side by side.
    for part in await asyncio.gather(*(_retries(ns, limit) for limit in (-1, 0, 2))):
        seen.update(part)
    return seen


async def _retries(ns: str, max_reconsume: int) -> Observation:
    topic, group = await new_topic(ns), unique("retry_g")
    consumer, deliveries = failing_consumer(ns, group, topic, max_reconsume)
    await consumer.start()
    try:
        await positioned_then_send(consumer, ns, topic, ("fine", "flaky", "poison"), keyed=True)
        # With no reconsume allowed, the flaky message's one failure sends it to the %DLQ%
        # too; otherwise it is consumed on its redelivery, and then never dead-lettered.
        flaky_deliveries = 1 if max_reconsume == 0 else 2
        await deliveries.wait(lambda: deliveries.bodies().count("flaky") >= flaky_deliveries)
        dead_count = 2 if max_reconsume == 0 else 1
        dead = await read_topic(ns, f"%DLQ%{group}", dead_count, timeout=WAIT_S)
    finally:
        await consumer.shutdown()
    label = f"maxReconsumeTimes {max_reconsume}"
    seen: Observation = {
        f"{label}: {body} delivered with reconsume times": [
            d.reconsume_times for d in deliveries.all if d.body == body
        ]
        for body in ("fine", "flaky", "poison")
    }
    seen[f"{label}: dead letters"] = sorted(m.body.decode() for m in dead)
    (letter,) = [m for m in dead if m.body == b"poison"]
    seen[f"{label}: dead letter keys, tags"] = [letter.keys, letter.tags]
    seen[f"{label}: dead letter reconsume times"] = letter.reconsume_times
    seen[f"{label}: dead letter names its topic"] = letter.properties.get("RETRY_TOPIC") == topic
    return seen


async def broadcasting(target: Target) -> Observation:
    """Two members of a broadcasting group, one message failing its consumption: the bodies
    each member gets in offset order and their reconsume times (RocketMQ's client does not
    send a broadcasting member's failure back to the broker)."""
    ns = target.namesrv
    topic, group = await new_topic(ns), unique("bcast_g")
    deliveries = Deliveries()
    names = ("m0", "m1")
    bodies = [f"b{i}" for i in range(6)]
    with tempfile.TemporaryDirectory() as store:
        members = []
        for name in names:
            member = PushConsumer(
                group,
                config=config_for(ns, unique(name)),
                message_model=MessageModel.BROADCASTING,
                consume_from=ConsumeFrom.LAST_OFFSET,
                offset_store_dir=Path(store),
            )
            member.subscribe(topic)

            def listener(
                msgs: list[MessageExt], ctx: ConcurrentContext, name: str = name
            ) -> ConsumeResult:
                deliveries.record(name, ctx.mq, msgs)
                failed = msgs[0].body == b"b0"
                return ConsumeResult.RECONSUME_LATER if failed else ConsumeResult.SUCCESS

            member.register_listener(listener)
            members.append(member)
        try:
            for member in members:
                await member.start()
            await positioned(*members)
            async with Producer(unique("pg"), config=config_for(ns)) as producer:
                for body in bodies:
                    await producer.send(Message(topic, body.encode()))
            await deliveries.wait(
                lambda: all(set(bodies) <= set(deliveries.bodies(n)) for n in names)
            )
        finally:
            for member in members:
                await member.shutdown()
    seen: Observation = {}
    for name in names:
        mine = [d for d in deliveries.all if d.consumer == name]
        seen[f"{name}: bodies in offset order"] = [
            d.body for d in sorted(mine, key=lambda d: d.queue_offset)
        ]
        seen[f"{name}: reconsume times"] = sorted({d.reconsume_times for d in mine})
    async with Admin(config=config_for(ns)) as admin:
        seen["retry topic listed"] = f"%RETRY%{group}" in await admin.topics()
    return seen


async def admin_listings(target: Target) -> Observation:
    """What the admin API lists after a group consumed part of a topic, and a reset by time."""
    ns = target.namesrv
    topic, group = await new_topic(ns, queues=2), unique("admin_g")
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        queues = sorted(await producer.fetch_publish_queues(topic), key=lambda q: q.queue_id)
        for i in range(4):
            await producer.send(Message(topic, b"early-%d" % i), queue=queues[i % 2])
        await asyncio.sleep(0.05)
        between_ms = int(time.time() * 1000)
        await asyncio.sleep(0.05)
        for i in range(2):
            await producer.send(Message(topic, b"late-%d" % i), queue=queues[0])
    seen: Observation = {}
    async with Admin(config=config_for(ns)) as admin:
        await admin.reset_offsets(group, topic, QueueOffset(1))
        progress = await admin.group_progress(group, topic)
        seen["progress (queue, broker offset, consumer offset, lag)"] = [
            [p.mq.queue_id, p.broker_offset, p.consumer_offset, p.lag] for p in progress
        ]
        seen["topics lists the topic"] = topic in await admin.topics()
        seen["user topics lists the topic"] = topic in await admin.user_topics()
        status = await admin.topic_status(topic)
        seen["topic status (queue, min, max)"] = [
            [q.mq.queue_id, q.min_offset, q.max_offset] for q in status
        ]
        moved = await admin.reset_offsets(group, topic, between_ms)
        seen["reset by time"] = sorted([mq.queue_id, o] for mq, o in moved.items())
        seen["members of an offline group"] = await admin.consumer_ids(group, topic)
    return seen


async def consume_from_new_group(target: Target) -> Observation:
    """Where a group that never committed starts: first, last, or a time between messages."""
    ns = target.namesrv
    topic = await new_topic(ns)
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        between_ms = await send_around_a_time(
            producer, topic, [f"old-{i}" for i in range(3)], [f"recent-{i}" for i in range(2)]
        )
        seen: Observation = {}
        for start in ConsumeFrom:
            consumer = LitePullConsumer(
                unique("from_g"),
                config=config_for(ns),
                consume_from=start,
                consume_timestamp_ms=between_ms if start is ConsumeFrom.TIMESTAMP else None,
            )
            consumer.subscribe(topic)
            await consumer.start()
            got: list[str] = []
            try:
                # Sent once the group knows where it starts: whatever that is, this comes last.
                async with asyncio.timeout(WAIT_S):
                    while not consumer.assignment() or any(
                        consumer.position(mq) is None for mq in consumer.assignment()
                    ):
                        await asyncio.sleep(0.05)
                marker = f"after-{start.name}"
                await producer.send(Message(topic, marker.encode()))
                deadline = time.monotonic() + WAIT_S
                while marker not in got and time.monotonic() < deadline:
                    got += [m.body.decode() for m in await consumer.poll(timeout=1)]
            finally:
                await consumer.shutdown()
            seen[start.name] = [b for b in got if not b.startswith("after-")] + (
                ["(marker)"] if marker in got else []
            )
    return seen


async def lookups(target: Target) -> Observation:
    """Messages found by offset id, by the producer's id (UNIQ_KEY) and by key."""
    ns = target.namesrv
    topic = await new_topic(ns, queues=2)
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        sent = [
            await producer.send(Message(topic, b"m%d" % i, keys=[f"key-{i % 2}", f"only-{i}"]))
            for i in range(4)
        ]
    seen: Observation = {}
    async with Admin(config=config_for(ns)) as admin:
        # Each system indexes keys a moment after answering the send, in the order it stored
        # the messages: once the last one sent is found by its key, every lookup sees all four.
        async with asyncio.timeout(WAIT_S):
            while not await admin.messages_by_key(topic, "only-3"):
                await asyncio.sleep(0.05)
        probe = sent[2]
        by_offset_id = await admin.message_by_id(probe.offset_msg_id)
        by_uniq_key = await admin.message_by_id(probe.msg_id, topic)
        seen["by offset id"] = [by_offset_id.body.decode(), by_offset_id.keys]
        seen["by UNIQ_KEY"] = [by_uniq_key.body.decode(), by_uniq_key.keys]
        seen["by key key-0"] = sorted(
            m.body.decode() for m in await admin.messages_by_key(topic, "key-0")
        )
        seen["by key only-3"] = [
            m.body.decode() for m in await admin.messages_by_key(topic, "only-3")
        ]
        seen["by an unknown key"] = await outcome(admin.messages_by_key(topic, "no-such-key"))
        seen["by an unknown UNIQ_KEY"] = await outcome(admin.message_by_id("0" * 32, topic))
    return seen


async def transactions(target: Target) -> Observation:
    """Half messages decided by the producer (commit, rollback) and by the broker's check-back
    (the producer answered UNKNOWN; the check says commit or rollback). Every broker checks
    halves older than 1 s every second here (`transactionCheckInterval`, `transactionTimeOut`)."""
    ns = target.namesrv
    topic = await new_topic(ns)
    checks: list[str] = []
    answers = {"unknown-then-commit": COMMIT, "unknown-then-rollback": ROLLBACK}
    # The durable truth a check reads. RocketMQ 5 may check a half the producer already
    # decided: it writes the decisions in batches (every 3 s by default), and here a half is
    # checked after 1 s; the check must then say what was decided.
    ledger = {"commit": COMMIT, "rollback": ROLLBACK, **answers}

    def check(msg: MessageExt) -> LocalTransactionState:
        checks.append(msg.body.decode())
        return ledger[msg.body.decode()]

    def local(msg: Message, arg: object) -> LocalTransactionState:
        return {"commit": COMMIT, "rollback": ROLLBACK}.get(msg.body.decode(), UNKNOWN)

    # One queue, read from its first offset by a group started before anything is sent.
    async with (
        TopicReader(ns, topic) as reader,
        TransactionProducer(unique("txg"), config=config_for(ns), check_listener=check) as producer,
    ):
        sent = {
            body: await producer.send_in_transaction(Message(topic, body.encode()), local)
            for body in ("commit", "rollback", *answers)
        }
        async with asyncio.timeout(WAIT_S):
            while not set(answers) <= set(checks):
                await asyncio.sleep(0.1)
        # The check's answer reaches the broker after the listener returned: the plain
        # message is sent once the checked-back commit is visible, so it comes after every
        # decision on both systems however slow the box (the rollbacks never show).
        await reader.until(b"unknown-then-commit")
        await producer.send(Message(topic, b"end"))
        got = await reader.until(b"end")
    visible = {m.body.decode(): m for m in got}
    return {
        "local states": [sent[b].local_state.name for b in sent],
        "half send statuses": [sent[b].send.status.name for b in sent],
        "undecided halves checked back": sorted(set(checks) & set(answers)),
        "visible, in order": [m.body.decode() for m in got],
        "committed message's TRAN_MSG": visible["commit"].properties.get("TRAN_MSG"),
        "committed message's transaction flag": visible["commit"].sys_flag
        & MessageSysFlag.TRANSACTION_COMMIT_TYPE
        == MessageSysFlag.TRANSACTION_COMMIT_TYPE,
        "a visible id is the half's id": visible["commit"].msg_id == sent["commit"].send.msg_id,
    }


async def grpc_java5(target: Target) -> Observation:
    """RocketMQ's gRPC Java client (5.0.8, the `Grpc5` peer): a producer with tag, keys and a
    property; a SimpleConsumer that leaves its first message unacknowledged (it comes back, its
    attempt counted); a PushConsumer whose first delivery fails (retried)."""
    assert target.grpc_endpoint is not None
    ns, endpoint = target.namesrv, target.grpc_endpoint
    seen: Observation = {}

    async def java5(**options: object) -> list[dict[str, Any]]:
        return await asyncio.to_thread(
            run_java5_peer, timeout=120, endpoint=endpoint, timeout_ms=110_000, **options
        )

    topic = await new_topic(ns, queues=2)
    sent = await java5(mode="produce", topic=topic, count=4, tag="J")
    seen["produce: sent"] = len([e for e in sent if e["event"] == "sent"])
    # The two consumers are groups of their own: they wait on a redelivery and a retry side
    # by side.
    simple_run, push_run = await asyncio.gather(
        java5(mode="simple", topic=topic, group=unique("simple_g"), expect=4, skip_ack_first=1),
        java5(mode="push", topic=topic, group=unique("push_g"), expect=4, fail_first=1),
    )
    simple = [e for e in simple_run if e["event"] == "msg"]
    seen["simple: acked bodies"] = sorted(e["body"] for e in simple if e["outcome"] == "acked")
    skipped = simple[0]
    seen["simple: first delivery"] = [skipped["outcome"], skipped["attempt"]]
    seen["simple: its redeliveries' attempts"] = [
        e["attempt"] for e in simple[1:] if e["msgId"] == skipped["msgId"]
    ]
    seen["simple: tags, keys, property"] = sorted(
        {(e["tag"], e["keys"].startswith("java5-key-"), e["peerProperty"]) for e in simple}
    )
    pushed = [e for e in push_run if e["event"] == "msg"]
    failed = [e for e in pushed if e["outcome"] == "FAILURE"]
    seen["push: failures"] = len(failed)
    seen["push: the failed one's retries (outcome, attempt)"] = [
        [e["outcome"], e["attempt"]] for e in pushed if e["msgId"] == failed[0]["msgId"]
    ][1:]
    seen["push: bodies consumed"] = sorted({e["body"] for e in pushed if e["outcome"] == "SUCCESS"})
    return seen


SCENARIOS: dict[str, Scenario] = {
    "send_modes": send_modes,
    "tag_filters": tag_filters,
    "sql_filters": sql_filters,
    "bad_input": bad_input,
    "retries_to_dlq": retries_to_dlq,
    "broadcasting": broadcasting,
    "admin_listings": admin_listings,
    "consume_from_new_group": consume_from_new_group,
    "lookups": lookups,
    "transactions": transactions,
    "grpc_java5": grpc_java5,
    **SCENARIOS_CONSUME,
    **SCENARIOS5,
    **SCENARIOS_GRPC,
    **SCENARIOS_JAVA,
}
