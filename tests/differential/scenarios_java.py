"""Differential scenarios driven by RocketMQ's Java remoting client, as its users drive it: the
peer programs of tests/peers/java (`Produce`, `PushConsume`, `TransactionProduce`, `LitePull`),
on rocketmq-client 4.9.8 (`java_remoting`) and, the same build on the 5.x classpath, on
rocketmq-client 5.3.3 (`java_remoting53`).

What is compared is what the programs report a user sees (their JSON events): send statuses,
the queue each sharding key chose, bodies per queue in order, tags, keys and a user property,
the outcome and reconsume times of each delivery, what a transaction made visible, and what a
lite pull read from an offset. Nothing that is each system's own (ids, broker names, times).
A sync, async or one-way send picks its queue round-robin from a random start, so which queue
such a message lands on is not compared; a sharding key's queue is (`hashCode % queues`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from client.client_e2e import unique
from differential.harness import Observation, Target, new_topic, reading_and_sending
from longboat.client import Message
from peers.rocketmq import CLIENT_DIR, run_java_peer
from peers.rocketmq5 import SERVER5_DIR

Events = list[dict[str, Any]]
MODES = ("sync", "async", "oneway", "batch", "ordered")
PER_MODE = 4  # messages per send mode; message i carries tag TagA for even i, TagB for odd


async def java_remoting(target: Target) -> Observation:
    """RocketMQ's Java client 4.9.8 (remoting)."""
    return await _remoting(target, CLIENT_DIR)


async def java_remoting53(target: Target) -> Observation:
    """RocketMQ's Java client 5.3.3 (remoting): the same programs on rocketmq-client 5.3.3."""
    return await _remoting(target, SERVER5_DIR)


async def _remoting(target: Target, client_jars: Path) -> Observation:
    """A producer sending `PER_MODE` messages in each send mode to a 4-queue topic, each with a
    tag, a key and a user property (the ordered ones by sharding key k0 or k1); then, at once,
    a concurrent push group subscribed to TagA failing each message's first delivery, and an
    orderly push group taking everything. Beside it, on a 1-queue topic: a message, a
    transaction committed and one rolled back, a message; a lite pull assigned the queue reads
    it from offset 1 and commits."""
    ns = target.namesrv

    async def java(program: str, **options: object) -> Events:
        return await asyncio.to_thread(
            run_java_peer,
            program,
            timeout=150,
            client_jars=client_jars,
            namesrv=ns,
            timeout_ms=140_000,
            **options,
        )

    async def sends_then_consumers() -> tuple[Events, Events, Events]:
        topic = await new_topic(ns, queues=4)
        sent = await java(
            "Produce",
            topic=topic,
            mode=",".join(MODES),
            count=PER_MODE,
            tags="TagA,TagB",
            keys="jk",
            props="color=blue",
            shard_keys=2,
        )
        pushed, orderly = await asyncio.gather(
            java(
                "PushConsume",
                topic=topic,
                group=unique("jpush_g"),
                tags="TagA",
                fail_first=1,
                expect=len(MODES) * PER_MODE // 2,
            ),
            java(
                "PushConsume",
                topic=topic,
                group=unique("jorderly_g"),
                listener="orderly",
                expect=len(MODES) * PER_MODE,
            ),
        )
        return sent, pushed, orderly

    async def transaction_then_lite_pull() -> tuple[Events, Events]:
        topic = await new_topic(ns)
        async with reading_and_sending(ns, topic) as (reader, producer, _):
            await producer.send(Message(topic, b"before"))
            # The check-back answers UNKNOWN: both halves are decided by the producer, and a
            # late check of one (RocketMQ 5 writes decisions in batches) must change nothing.
            decided = await java(
                "TransactionProduce",
                topic=topic,
                group=unique("jtx_pg"),
                count=2,
                decide="commit,rollback",
                check_answer="unknown",
            )
            # The producer's decisions are one-way requests: "after" is sent once the committed
            # message is visible, so it comes after it however slow the box.
            await reader.until(b"tx-0")
            await producer.send(Message(topic, b"after"))
        read = await java(
            "LitePull", topic=topic, group=unique("jlite_g"), mode="assign", seek="0:1", expect=2
        )
        return decided, read

    (sent, pushed, orderly), (decided, read) = await asyncio.gather(
        sends_then_consumers(), transaction_then_lite_pull()
    )
    return {
        **_sends(_events(sent, "sent")),
        **_concurrent(_events(pushed, "msg")),
        **_orderly(_events(orderly, "msg")),
        "transaction: (local state, send status)": [
            [e["localState"], e["sendStatus"]] for e in _events(decided, "sent")
        ],
        "lite pull from offset 1: (body, queue offset)": [
            [e["body"], e["queueOffset"]] for e in _events(read, "msg")
        ],
        "lite pull: committed offset": _events(read, "committed")[0]["offsets"],
    }


def _events(events: Events, kind: str) -> Events:
    return [e for e in events if e["event"] == kind]


def _sends(sent: Events) -> Observation:
    batch = [e for e in sent if e["mode"] == "batch"]
    return {
        "sends answered, per mode": dict(Counter(e["mode"] for e in sent)),
        "send statuses": sorted({e["sendStatus"] for e in sent if "sendStatus" in e}),
        "batch: one queue, consecutive offsets": len({e["queueId"] for e in batch}) == 1
        and [e["queueOffset"] for e in batch]
        == list(range(batch[0]["queueOffset"], batch[0]["queueOffset"] + PER_MODE)),
        "ordered: queue per sharding key": {
            key: sorted({e["queueId"] for e in sent if e.get("shardKey") == key})
            for key in ("k0", "k1")
        },
    }


def _concurrent(msgs: Events) -> Observation:
    """The concurrent TagA group: every message fails its first delivery and comes back."""
    return {
        "push TagA: consumed": sorted({e["body"] for e in msgs if e["outcome"] == "ok"}),
        "push TagA: tags delivered": sorted({e["tags"] for e in msgs}),
        "push TagA: (delivery, outcome, reconsume times)": sorted(
            {(e["delivery"], e["outcome"], e["reconsumeTimes"]) for e in msgs}
        ),
        "push TagA: each delivery's topic is the topic": sorted(
            {e["topic"] == msgs[0]["topic"] and not e["topic"].startswith("%") for e in msgs}
        ),
        "push TagA: keys as sent": all(
            e["keys"] == "jk-" + e["body"].rsplit("-", 1)[1] for e in msgs
        ),
        "push TagA: user property": sorted({e["properties"].get("color") for e in msgs}),
    }


def _orderly(msgs: Events) -> Observation:
    """The orderly group: each queue's messages delivered in offset order."""
    by_queue: dict[int, Events] = {}
    for e in msgs:
        by_queue.setdefault(e["queueId"], []).append(e)
    offsets = {q: [e["queueOffset"] for e in queue] for q, queue in by_queue.items()}
    batch = [e for e in msgs if e["body"].startswith("batch-")]
    return {
        "orderly: consumed": sorted({e["body"] for e in msgs}),
        "orderly: each queue in offset order": all(o == sorted(o) for o in offsets.values()),
        "orderly: sharding keys' messages per queue": [
            [q, [e["body"] for e in by_queue[q] if e["body"].startswith("ordered-")]]
            for q in sorted(by_queue)
            if any(e["body"].startswith("ordered-") for e in by_queue[q])
        ],
        "orderly: the batch in one queue, in order": [e["body"] for e in batch]
        == [f"batch-{i}" for i in range(PER_MODE)]
        and len({e["queueId"] for e in batch}) == 1,
        "orderly: reconsume times": sorted({e["reconsumeTimes"] for e in msgs}),
    }


SCENARIOS_JAVA = {"java_remoting": java_remoting, "java_remoting53": java_remoting53}
