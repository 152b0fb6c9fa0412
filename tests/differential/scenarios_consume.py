"""Differential scenarios of consumption past the basics: a listener running over its
consume timeout, orderly consumption while members join and leave, every kind of delay level,
and a group's offsets reset by time. Longboat's Python client on both
systems; what differs is the broker's part (send-back, locks, schedule, offset search)."""

from __future__ import annotations

import asyncio
import threading
import time

from client.client_e2e import config_for, unique
from client.push_support import (
    Deliveries,
    settled,
)
from differential.harness import (
    WAIT_S,
    Observation,
    Target,
    new_topic,
    positioned_then_send,
    raw_send,
    reading_and_sending,
    send_around_a_time,
)
from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.producer import Producer
from longboat.client.push import (
    ConcurrentContext,
    ConsumeResult,
    OrderlyContext,
    OrderlyResult,
    PushConsumer,
)
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop


async def consume_timeout(target: Target) -> Observation:
    """A listener call running past `consume_timeout` (1 s here; Java's `consumeTimeout`,
    in minutes there): the client sends the message back (delay level 3), the broker
    redelivers it through the retry topic with its reconsume times counted, the late result
    of the first call is ignored, and the group's offset moves on."""
    ns = target.namesrv
    topic, group = await new_topic(ns), unique("timeout_g")
    deliveries = Deliveries()
    came_back = threading.Event()
    consumer = PushConsumer(group, config=config_for(ns), consume_timeout=1.0)
    consumer.subscribe(topic)

    def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> ConsumeResult:
        deliveries.record("c", ctx.mq, msgs)
        if msgs[0].body == b"hangs":
            if msgs[0].reconsume_times == 0:
                came_back.wait(WAIT_S)  # past the timeout, until the redelivery came
            else:
                came_back.set()
        return ConsumeResult.SUCCESS

    consumer.register_listener(listener)
    await consumer.start()
    try:
        await positioned_then_send(consumer, ns, topic, ("before", "hangs", "after"))
        await deliveries.wait(
            lambda: (
                deliveries.bodies().count("hangs") >= 2
                and {"before", "after"} <= set(deliveries.bodies())
            )
        )
    finally:
        came_back.set()
        await consumer.shutdown()
    seen: Observation = {
        f"{body}: reconsume times of its deliveries": [
            d.reconsume_times for d in deliveries.all if d.body == body
        ]
        for body in ("before", "hangs", "after")
    }
    seen["redelivered from the retry topic"] = [
        d.topic for d in deliveries.all if d.body == "hangs"
    ] == [topic, topic]
    async with Admin(config=config_for(ns)) as admin:
        progress = await admin.group_progress(group, topic)
    seen["lag after shutdown"] = [p.lag for p in progress]
    return seen


async def orderly_members(target: Target) -> Observation:
    """An orderly group of 4 queues: a member alone, a second joining, the first leaving, a
    batch of messages per sharding key sent in each phase. Each key's messages are first
    delivered in the order sent; redeliveries after a queue changed hands may repeat some
    (at least once), which is not compared."""
    ns = target.namesrv
    topic, group = await new_topic(ns, queues=4), unique("orderly_g")
    deliveries = Deliveries()
    keys = [f"key{k}" for k in range(4)]
    sent: list[str] = []

    async def member(name: str) -> PushConsumer:
        consumer = PushConsumer(
            group, config=config_for(ns, unique(name)), consume_from=ConsumeFrom.FIRST_OFFSET
        )
        consumer.subscribe(topic)

        def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> OrderlyResult:
            deliveries.record(name, ctx.mq, msgs)
            return OrderlyResult.SUCCESS

        consumer.register_orderly(listener)
        await consumer.start()
        return consumer

    async def send_phase(producer: Producer, phase: int) -> None:
        for i in range(5):
            for key in keys:
                body = f"{key}-{phase}{i}"
                await producer.send(Message(topic, body.encode()), sharding_key=key)
                sent.append(body)

    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        first = await member("a")
        members = [first]
        try:
            await settled(members, {topic: 4}, timeout=WAIT_S)
            await send_phase(producer, 0)
            members.append(await member("b"))
            await settled(members, {topic: 4}, timeout=WAIT_S)
            await send_phase(producer, 1)
            await first.shutdown()
            members.remove(first)
            await settled(members, {topic: 4}, timeout=WAIT_S)
            await send_phase(producer, 2)
            await deliveries.wait_for_bodies(set(sent), timeout=2 * WAIT_S)
        finally:
            for consumer in members:
                await consumer.shutdown()
    first_deliveries = list(dict.fromkeys(deliveries.bodies()))
    return {
        "every message delivered": set(first_deliveries) == set(sent),
        **{
            f"{key}: first deliveries in order sent": [
                b for b in first_deliveries if b.startswith(key + "-")
            ]
            == [b for b in sent if b.startswith(key + "-")]
            for key in keys
        },
    }


async def delay_levels(target: Target) -> Observation:
    """Messages sent to queue 1 with delay levels 0 (none), 1, 3, 18 (the last) and the raw
    values 19 (past the last) and -1; every level is 1 s on every broker here."""
    ns = target.namesrv
    topic = await new_topic(ns, queues=2)
    levels = (0, 1, 3, 18)
    async with reading_and_sending(ns, topic) as (reader, producer, admin):
        queue = next(q for q in await producer.fetch_publish_queues(topic) if q.queue_id == 1)
        results = [
            await producer.send(
                Message(topic, f"level {level}".encode(), delay_level=level), queue=queue
            )
            for level in levels
        ]
        for raw in ("19", "-1"):
            results.append(
                await raw_send(
                    admin, topic, f"level {raw}".encode(), queue_id=1, properties={Prop.DELAY: raw}
                )
            )
        bodies = [f"level {level}" for level in (*levels, 19, -1)]
        await reader.until(*(b.encode() for b in bodies))
    seen: Observation = {"send statuses": [r.status.name for r in results]}
    delivered = [reader.message(body.encode()) for body in bodies]
    for body, msg in zip(bodies, delivered, strict=True):
        seen[f"{body}: (queue, held a second, REAL_TOPIC is the topic)"] = [
            msg.queue_id,
            msg.store_timestamp - msg.born_timestamp >= 900,
            msg.properties.get(Prop.REAL_TOPIC) == topic,
        ]
    seen["DELAY delivered, by level sent"] = {
        body: msg.properties.get(Prop.DELAY) for body, msg in zip(bodies, delivered, strict=True)
    }
    return seen


async def reset_by_time(target: Target) -> Observation:
    """A group's offsets reset by time while it is offline, and what a member then reads.
    The time is 1 s after the early messages and 50 ms before the late ones, so the message
    stored nearest to it (RocketMQ's choice) and the first stored after it agree."""
    ns = target.namesrv
    topic, group = await new_topic(ns), unique("reset_g")
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        early, late = [f"early-{i}" for i in range(3)], [f"late-{i}" for i in range(2)]
        between_ms = await send_around_a_time(producer, topic, early, late, gap_s=1.0)
    seen: Observation = {}
    async with Admin(config=config_for(ns)) as admin:
        later = await admin.reset_offsets(group, topic, int(time.time() * 1000) + 3_600_000)
        seen["reset to an hour from now"] = list(later.values())
        earlier = await admin.reset_offsets(group, topic, between_ms - 3_600_000)
        seen["reset to an hour ago"] = list(earlier.values())
        moved = await admin.reset_offsets(group, topic, between_ms)
        seen["reset to between"] = list(moved.values())
    consumer = LitePullConsumer(group, config=config_for(ns))
    consumer.subscribe(topic)
    await consumer.start()
    got: list[str] = []
    try:
        async with asyncio.timeout(WAIT_S):
            while "late-1" not in got:
                got += [m.body.decode() for m in await consumer.poll(timeout=1)]
    finally:
        await consumer.shutdown()
    seen["a member then reads"] = got
    return seen


SCENARIOS_CONSUME = {
    "consume_timeout": consume_timeout,
    "orderly_members": orderly_members,
    "delay_levels": delay_levels,
    "reset_by_time": reset_by_time,
}
