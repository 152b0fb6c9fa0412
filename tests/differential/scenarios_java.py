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
from collections.abc import Callable
from typing import Any

from client.client_e2e import unique
from differential.harness import Observation, Target, new_topic, reading_and_sending
from longboat.client import Message
from peers.rocketmq import run_java_peer
from peers.rocketmq5 import run_java53_peer

Events = list[dict[str, Any]]
# Send modes to the pushed topic; a batch goes to the lite-pulled one (see `_remoting`).
PUSHED_MODES = ("sync", "async", "oneway", "ordered")
PER_MODE = 4  # messages per send mode; message i carries tag TagA for even i, TagB for odd
TAGGED = {"tags": "TagA,TagB", "keys": "jk", "props": "color=blue"}


async def java_remoting(target: Target) -> Observation:
    """RocketMQ's Java client 4.9.8 (remoting)."""
    return await _remoting(target, run_java_peer)


async def java_remoting53(target: Target) -> Observation:
    """RocketMQ's Java client 5.3.3 (remoting): the same programs on rocketmq-client 5.3.3."""
    return await _remoting(target, run_java53_peer)


async def _remoting(target: Target, run: Callable[..., Events]) -> Observation:
    """A producer sending `PER_MODE` messages in each of `PUSHED_MODES` to a 4-queue topic,
    each with a tag, a key and a user property (the ordered ones by sharding key k0 or k1);
    then, at once, a concurrent push group subscribed to TagA failing each message's first
    delivery, and an orderly push group taking everything. Beside it, on a 1-queue topic: a
    batch of `PER_MODE` tagged messages, a transaction committed and one rolled back, a
    message; a lite pull assigned the queue reads it from offset 2 and commits.

    The batch is read by the lite pull, not pushed: the push program tells deliveries apart by
    message id, and the 5.3.3 client gives a batch an id of its own, which a broker that
    appends the batch's properties to each message (RocketMQ 5's, Longboat's) stores as every
    message's id; "batch: distinct ids read" shows it."""
    ns = target.namesrv

    async def java(program: str, **options: object) -> Events:
        return await asyncio.to_thread(
            run, program, timeout=150, namesrv=ns, timeout_ms=140_000, **options
        )

    async def sends_then_consumers() -> tuple[Events, Events, Events]:
        topic = await new_topic(ns, queues=4)
        modes = ",".join(PUSHED_MODES)
        sent = await java(
            "Produce", topic=topic, mode=modes, count=PER_MODE, shard_keys=2, **TAGGED
        )
        pushed, orderly = await asyncio.gather(
            java(
                "PushConsume",
                topic=topic,
                group=unique("jpush_g"),
                tags="TagA",
                fail_first=1,
                expect=len(PUSHED_MODES) * PER_MODE // 2,
            ),
            java(
                "PushConsume",
                topic=topic,
                group=unique("jorderly_g"),
                listener="orderly",
                expect=len(PUSHED_MODES) * PER_MODE,
            ),
        )
        return sent, pushed, orderly

    async def batch_transaction_then_lite_pull() -> tuple[Events, Events, Events]:
        topic = await new_topic(ns)
        batch = await java("Produce", topic=topic, mode="batch", count=PER_MODE, **TAGGED)
        async with reading_and_sending(ns, topic) as (reader, producer, _):
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
            "LitePull", topic=topic, group=unique("jlite_g"), mode="assign", seek="0:2", expect=4
        )
        return batch, decided, read

    (sent, pushed, orderly), (batch, decided, read) = await asyncio.gather(
        sends_then_consumers(), batch_transaction_then_lite_pull()
    )
    pulled = _events(read, "msg")
    return {
        **_sends(_events(sent, "sent") + _events(batch, "sent")),
        **_concurrent(_events(pushed, "msg")),
        **_orderly(_events(orderly, "msg")),
        "transaction: (local state, send status)": [
            [e["localState"], e["sendStatus"]] for e in _events(decided, "sent")
        ],
        "lite pull from offset 2: (body, queue offset)": [
            [e["body"], e["queueOffset"]] for e in pulled
        ],
        "lite pull: committed offset": _events(read, "committed")[0]["offsets"],
        "batch read: (body, tags, keys, property)": [
            [e["body"], e["tags"], e["keys"], e["properties"].get("color")]
            for e in pulled
            if e["body"].startswith("batch-")
        ],
        "batch: distinct ids read": len(
            {e["msgId"] for e in pulled if e["body"].startswith("batch-")}
        ),
    }


def _events(events: Events, kind: str) -> Events:
    return [e for e in events if e["event"] == kind]


def _sends(sent: Events) -> Observation:
    batch = [e for e in sent if e["mode"] == "batch"]
    return {
        "sends answered, per mode": dict(Counter(e["mode"] for e in sent)),
        "send statuses": sorted({e["sendStatus"] for e in sent if "sendStatus" in e}),
        "batch: consecutive offsets from 0": [e["queueOffset"] for e in batch]
        == list(range(PER_MODE)),
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
    return {
        "orderly: consumed": sorted({e["body"] for e in msgs}),
        "orderly: each queue in offset order": all(o == sorted(o) for o in offsets.values()),
        "orderly: sharding keys' messages per queue": [
            [q, [e["body"] for e in by_queue[q] if e["body"].startswith("ordered-")]]
            for q in sorted(by_queue)
            if any(e["body"].startswith("ordered-") for e in by_queue[q])
        ],
        "orderly: reconsume times": sorted({e["reconsumeTimes"] for e in msgs}),
    }


SCENARIOS_JAVA = {"java_remoting": java_remoting, "java_remoting53": java_remoting53}
# The 5.x client's lite pull consumer pulls with LITE_PULL_MESSAGE (361), a request code 4.9.7
# does not know ("request type 361 not supported"): its pulls fail until the program's timeout.
ON_5_ONLY = {"java_remoting53"}
