"""Differential scenarios of what RocketMQ 5 brought: timer messages (RIP-43), recall, and pop
consumption (RIP-19, orderly pop among it), each over remoting with Longboat's Python client
and over gRPC with RocketMQ's official Python client (`rocketmq-python-client` 5.1.2).
RocketMQ 4.9.7 has none of them (`SINCE_5`: run against Longboat and RocketMQ 5.3.3 only); light
message queues (`lmq`, RIP-28) are here beside them but came with 4.9.3, and run on 4.9.7 too.

Timers fire on a wheel of `timerPrecisionMs` (1 s by default) slots, so a timer may fire up
to a slot early and two due in the same second in either order: what is observed is that
each fired no earlier than its due time less one slot, not their order or lateness.
"""

from __future__ import annotations

import asyncio
import base64
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from grpc.aio import AioRpcError
from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer
from rocketmq import Message as GrpcMessage
from rocketmq import Producer as GrpcProducer
from rocketmq.v5.util.misc import Misc

from client.client_e2e import config_for, read_topic, unique
from differential.harness import (
    WAIT_S,
    Observation,
    Target,
    master_addr,
    new_topic,
    outcome,
    raw_send,
    reading_and_sending,
)
from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.errors import NoRouteError
from longboat.client.pop import PopConsumer, PoppedMessage
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader, lmq_queue
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.bodies import SubscriptionGroupConfig
from longboat.protocol.header_fields import Header
from longboat.protocol.headers import RecallMessageRequestHeader
from longboat.protocol.message import MessageExt
from longboat.protocol.pop_headers import (
    ExtraInfo,
    NotificationRequestHeader,
    PollingInfoRequestHeader,
    PopMessageRequestHeader,
)
from longboat.protocol.properties import Prop
from longboat.protocol.recall_handle import RecallHandle
from peers.rocketmq5 import run_pop_consume

# The official client finds its IP by routing towards a public address; none is needed here.
Misc._Misc__LOCAL_IP = "127.0.0.1"  # type: ignore[attr-defined]

PRECISION_MS = 1000  # timerPrecisionMs, RocketMQ's default and Longboat's
FOUR_DAYS_MS = 4 * 24 * 3600 * 1000  # past timerMaxDelaySec (3 days by default)
# Long enough for a loaded host to ack a batch before its time runs out.
ORDERLY_INVISIBLE_S = 4.0
# How long a started official client waits for the endpoint to answer its settings
# (`_start_settled`).
SETTINGS_WAIT_S = 10
# What a delivered timer message may carry of the timer's own properties.
TIMER_PROPERTIES = (
    Prop.TIMER_DELIVER_MS,
    Prop.TIMER_DELAY_SEC,
    Prop.TIMER_DELAY_MS,
    Prop.TIMER_OUT_MS,
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES",
    Prop.REAL_TOPIC,
    Prop.REAL_QID,
)


def now_ms() -> int:
    return int(time.time() * 1000)


async def timers(target: Target) -> Observation:
    """Timer messages sent over remoting: an absolute time (TIMER_DELIVER_MS, Longboat's
    `Message.deliver_at`), relative ones (TIMER_DELAY_SEC, TIMER_DELAY_MS: raw sends, as the
    client reserves those names), a time already past, and one beyond the longest delay."""
    ns = target.namesrv
    topic = await new_topic(ns)
    seen: Observation = {}
    async with reading_and_sending(ns, topic) as (reader, producer, admin):
        start = now_ms()
        at = await producer.send(Message(topic, b"at+2s", deliver_at=start + 2000))
        past = await producer.send(Message(topic, b"at-5s", deliver_at=start - 5000))
        sec = await raw_send(admin, topic, b"delay-sec-1", properties={Prop.TIMER_DELAY_SEC: "1"})
        ms = await raw_send(
            admin, topic, b"delay-ms-1500", properties={Prop.TIMER_DELAY_MS: "1500"}
        )
        seen["beyond the longest delay"] = await outcome(
            producer.send(Message(topic, b"too-far", deliver_at=now_ms() + FOUR_DAYS_MS))
        )
        due = {"at+2s": start + 2000, "at-5s": start - 5000}
        await reader.until(b"at+2s", b"at-5s", b"delay-sec-1", b"delay-ms-1500")
        await producer.send(Message(topic, b"end"))
        await reader.until(b"end")
    due["delay-sec-1"] = reader.message(b"delay-sec-1").born_timestamp + 1000
    due["delay-ms-1500"] = reader.message(b"delay-ms-1500").born_timestamp + 1500
    seen["send statuses"] = [r.status.name for r in (at, past, sec, ms)]
    seen["recall handle given (at, past, sec, ms)"] = [
        bool(r.recall_handle) for r in (at, past, sec, ms)
    ]
    seen["visible"] = sorted(reader.bodies())
    seen["none early (by more than a slot)"] = {
        body: reader.message(body.encode()).store_timestamp >= due_ms - PRECISION_MS
        for body, due_ms in due.items()
    }
    seen["the past one stored at once"] = (
        reader.message(b"at-5s").store_timestamp - reader.message(b"at-5s").born_timestamp
        < PRECISION_MS
    )
    for body in ("at+2s", "delay-sec-1"):
        delivered = reader.message(body.encode())
        seen[f"{body}: timer properties delivered"] = sorted(
            p for p in TIMER_PROPERTIES if p in delivered.properties
        )
    seen["at+2s: its id is the send's"] = reader.message(b"at+2s").msg_id == at.msg_id
    return seen


async def recall(target: Target) -> Observation:
    """Recall over remoting (RECALL_MESSAGE): a timer not yet due, the same one again, one
    already delivered, a well-formed handle naming no message, a handle that is no handle."""
    ns = target.namesrv
    topic = await new_topic(ns)
    seen: Observation = {}
    async with reading_and_sending(ns, topic) as (reader, producer, admin):
        start = now_ms()
        doomed = await producer.send(Message(topic, b"recalled", deliver_at=start + 2000))
        # Due a second after the recalled one: once it is read, the recalled one would have been.
        kept = await producer.send(Message(topic, b"kept", deliver_at=start + 3000))
        plain = await producer.send(Message(topic, b"plain"))
        assert doomed.recall_handle and kept.recall_handle
        recalled_id = await producer.recall(topic, doomed.recall_handle)
        seen["recall before due: the message's id"] = recalled_id == doomed.msg_id
        seen["recall again"] = await outcome(producer.recall(topic, doomed.recall_handle))
        handle = RecallHandle.decode(doomed.recall_handle)
        stranger = RecallHandle(handle.topic, handle.broker_name, handle.timestamp_ms, "0" * 32)
        seen["recall a handle naming no message"] = await outcome(
            producer.recall(topic, stranger.encode())
        )
        _, addr = await master_addr(admin)
        garbage = RecallMessageRequestHeader(
            topic=topic, recallHandle="not-a-handle", producerGroup=unique("pg")
        )
        seen["recall with no handle at all"] = await outcome(
            admin.instance.api.recall_message(addr, garbage, timeout=10)
        )
        await reader.until(b"kept", b"plain")
        seen["recall once delivered"] = await outcome(producer.recall(topic, kept.recall_handle))
    seen["a plain send's recall handle"] = plain.recall_handle
    seen["visible"] = sorted(reader.bodies())
    return seen


async def pop_remoting(target: Target) -> Observation:
    """Pop consumption over remoting (POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME)
    with Longboat's `PopConsumer`: one message acked, one left to its invisible time (it comes
    back, its reconsume times counted), one hidden longer; acks of each, a second ack, and a
    second group getting everything."""
    ns = target.namesrv
    topic, group = await new_topic(ns), unique("pop_g")
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for body in (b"acked", b"expires", b"hidden"):
            await producer.send(Message(topic, body))
    seen: Observation = {}
    async with PopConsumer(group, config=config_for(ns)) as consumer:
        first = await _pop_until(consumer, topic, {"acked", "expires", "hidden"}, invisible=2.0)
        by_body = {m.body.decode(): m for m in first}
        seen["first pops (body, reconsume times)"] = [
            [m.body.decode(), m.reconsume_times] for m in first
        ]
        seen["ack"] = await outcome(consumer.ack(by_body["acked"]))
        seen["change invisible time to 60 s"] = await outcome(
            consumer.change_invisible_time(by_body["hidden"], 60.0)
        )
        again = await _pop_until(consumer, topic, {"expires"}, invisible=60.0)
        seen["popped again (body, reconsume times)"] = [
            [m.body.decode(), m.reconsume_times] for m in again
        ]
        returned = next(m for m in again if m.body == b"expires")
        seen["popped again: topic is the topic"] = returned.message.topic == topic
        seen["ack the redelivery"] = await outcome(consumer.ack(returned))
        seen["ack the hidden one by its new checkpoint"] = await outcome(
            consumer.ack(by_body["hidden"])
        )
        seen["ack the acked one again"] = await outcome(consumer.ack(by_body["acked"]))
        seen["ack the expired delivery's old checkpoint"] = await outcome(
            consumer.ack(by_body["expires"])
        )
    async with PopConsumer(unique("pop_g2"), config=config_for(ns)) as other:
        got = await _pop_until(other, topic, {"acked", "expires", "hidden"}, invisible=60.0)
        seen["another group pops"] = sorted(m.body.decode() for m in got)
    return seen


async def pop_dead_letters(target: Target) -> Observation:
    """Pop consumption by a group whose `retryMaxTimes` is 1, never acking a message popped
    with an invisible time of 1 s: its first two pops (reconsume times), then whether a dead
    letter reaches the group's `%DLQ%` (RocketMQ's broker never puts one there; how often its
    revive brings the message back within a window depends on the host's load, so that count
    is not compared, see `_dead_letters`)."""
    ns = target.namesrv
    topic, group = await new_topic(ns), unique("pop_dlq_g")
    async with Admin(config=config_for(ns)) as admin:
        _, addr = await master_addr(admin)
        await admin.instance.api.create_subscription_group(
            addr, SubscriptionGroupConfig(group_name=group, retry_max_times=1)
        )
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        await producer.send(Message(topic, b"never acked", keys=["never-acked"]))
    popped: list[PoppedMessage] = []

    async def pop_on() -> None:
        while True:
            popped.extend(await consumer.receive(topic, invisible_time=1.0, wait=2))

    async with PopConsumer(group, config=config_for(ns)) as consumer:
        popping = asyncio.create_task(pop_on())  # the consumer goes on asking, never acking
        try:
            async with asyncio.timeout(3 * WAIT_S):
                while len(popped) < 2:
                    await asyncio.sleep(0.1)
            dead = await _dead_letters(ns, group, popped)
        finally:
            popping.cancel()
            await asyncio.gather(popping, return_exceptions=True)
    return {
        "popped (reconsume times)": [m.reconsume_times for m in popped[:2]],
        "dead letters (body, keys)": [[m.body.decode(), m.keys] for m in dead],
    }


async def _dead_letters(ns: str, group: str, popped: list[PoppedMessage]) -> list[MessageExt]:
    """The group's dead letters once its message, popped twice, is past `retryMaxTimes` (1).

    A broker that dead-letters it does so when the second pop's invisible time runs out,
    creating the `%DLQ%` topic; one that does not brings it back instead, a third time. That
    third pop is the sign that no dead letter comes: the `%DLQ%` is not read on for the rest
    of `WAIT_S` (nor longer, with neither sign, as when only the read waited)."""
    reading = asyncio.create_task(read_topic(ns, f"%DLQ%{group}", 1, timeout=WAIT_S))

    async def popped_again() -> None:
        while len(popped) < 3:
            await asyncio.sleep(0.1)

    again = asyncio.create_task(popped_again())
    try:
        await asyncio.wait({reading, again}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (reading, again):
            if not task.done():
                task.cancel()
        await asyncio.gather(reading, again, return_exceptions=True)
    if reading.cancelled():  # popped a third time, no dead letter
        return []
    try:
        return reading.result()
    except NoRouteError:  # no dead letter ever created the group's %DLQ% topic
        return []


async def pop_orderly(target: Target) -> Observation:
    """Orderly pop over remoting (POP_MESSAGE with `order`) with `PopConsumer(orderly=True)`
    on a 2-queue topic holding a0, a1, a2 in one queue and b0, b1 in the other, all readable
    before the first pop.  The consumer acks each queue's messages in the order received,
    except that a1's first delivery fails: it is left unacked, and a2 behind it too, until
    their invisible time runs out.  Per queue, every delivery (body, reconsume times) in the
    order received; what was acked; then a pop waiting past the invisible time (an ack that
    did nothing would show here)."""
    ns = target.namesrv
    topic, group = await new_topic(ns, queues=2), unique("pop_order_g")
    sent = {"a": [b"a0", b"a1", b"a2"], "b": [b"b0", b"b1"]}
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        queues = sorted(await producer.fetch_publish_queues(topic), key=lambda q: q.queue_id)
        for queue, bodies in zip(queues, sent.values(), strict=True):
            for body in bodies:
                await producer.send(Message(topic, body), queue=queue)
    # Every message readable first: each queue's first pop takes all of it on either broker.
    await read_topic(ns, topic, 5, timeout=WAIT_S)
    deliveries: dict[str, list[list[Any]]] = {"a": [], "b": []}
    acked: list[str] = []
    failing = {"a1"}
    async with PopConsumer(group, orderly=True, config=config_for(ns)) as consumer:
        async with asyncio.timeout(3 * WAIT_S):
            while len(acked) < 5:
                batch = await consumer.receive(
                    topic, max_messages=32, invisible_time=ORDERLY_INVISIBLE_S, wait=2
                )
                stopped: set[int] = set()  # queues whose batch stopped at a failure
                for m in batch:
                    text = m.body.decode()
                    deliveries[text[0]].append([text, m.reconsume_times])
                    if text in failing or m.message.queue_id in stopped:
                        failing.discard(text)
                        stopped.add(m.message.queue_id)
                        continue
                    await consumer.ack(m)
                    acked.append(text)
        after = await consumer.receive(topic, invisible_time=60.0, wait=ORDERLY_INVISIBLE_S + 2)
    return {
        "queue a: deliveries (body, reconsume times)": deliveries["a"],
        "queue b: deliveries (body, reconsume times)": deliveries["b"],
        "acked": sorted(acked),
        "popped after every ack": [m.body.decode() for m in after],
    }


async def _pop_until(
    consumer: PopConsumer, topic: str, bodies: set[str], invisible: float
) -> list[PoppedMessage]:
    """Pops (each long-polled 2 s) until every one of `bodies` came; all popped."""
    got: list[PoppedMessage] = []
    async with asyncio.timeout(WAIT_S):
        while not bodies <= {m.body.decode() for m in got}:
            got += await consumer.receive(topic, max_messages=32, invisible_time=invisible, wait=2)
    return got


async def pop_java53(target: Target) -> Observation:
    """RocketMQ's remoting client 5.3.3 letting the broker assign (`DefaultMQPushConsumer` with
    `setClientRebalance(false)`: QUERY_ASSIGNMENT, POP_MESSAGE, ACK_MESSAGE) consuming a
    2-queue topic, after the group's mode was set to POP (SET_MESSAGE_REQUEST_MODE, as
    `mqadmin setConsumeMode` does: both brokers assign PULL otherwise): what it consumed, how
    often each came, and that each came by a pop (with its POP_CK checkpoint)."""
    ns = target.namesrv
    topic = await new_topic(ns, queues=2)
    group = unique("java_pop_g")
    async with Admin(config=config_for(ns)) as admin:
        await admin.set_message_request_mode(topic, group, "POP")
    bodies = [f"pop-{i}" for i in range(6)]
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for body in bodies:
            await producer.send(Message(topic, body.encode()))
    with tempfile.TemporaryDirectory() as logs:
        done = await asyncio.to_thread(
            run_pop_consume, ns, group, topic, len(bodies), log_root=Path(logs)
        )
    got = [line.split() for line in done.stdout.splitlines() if line.startswith("GOT ")]
    return {
        "finished": done.stdout.splitlines()[-1:],
        "consumed": sorted({g[1] for g in got}),
        "reconsume times": sorted({int(g[2]) for g in got}),
        "delivered by": sorted({g[3] for g in got}),
    }


async def grpc_python5(target: Target) -> Observation:
    """RocketMQ's official Python client (gRPC) against the gRPC endpoint: a message with tag,
    keys and a property, a timer (`delivery_timestamp`), a recalled timer (recalled again, and
    one recalled once delivered), a timer beyond the longest delay; a SimpleConsumer receiving
    and acking each (its delivery attempt counted).  A message left unacked coming back is
    compared in `pop_remoting`: over gRPC, RocketMQ's revive brought it back within 90 s in
    some runs only on a loaded host, which made the comparison a race."""
    assert target.grpc_endpoint is not None
    # RocketMQ 5's proxy sends a message only to a topic of its type (5.3.3 has no MIXED).
    topics = (
        await new_topic(target.namesrv),
        await new_topic(target.namesrv, message_type="DELAY"),
    )
    return await asyncio.to_thread(
        _on_own_loop, _grpc_python5_on, target.grpc_endpoint, *topics, unique("py5_g")
    )


def _on_own_loop(run: Callable[..., Observation], *args: Any) -> Observation:
    """`run(*args)` on this (worker) thread with an event loop of its own: grpc.aio, under
    the official client, asks the calling thread for one."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return run(*args)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _grpc_message(topic: str, body: bytes, **fields: Any) -> GrpcMessage:
    msg = GrpcMessage()
    msg.topic = topic
    msg.body = body
    for name, value in fields.items():
        setattr(msg, name, value)
    return msg


def _grpc_outcome(call: Callable[[], object]) -> str:
    """ "ok", or the name of the official client's exception (it names the gRPC code)."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return "ok"


def _grpc_python5_on(endpoint: str, topic: str, timer_topic: str, group: str) -> Observation:
    config = ClientConfiguration(endpoint, Credentials(), request_timeout=10)
    seen: Observation = {}
    producer = GrpcProducer(config, (topic, timer_topic))
    producer.startup()
    consumer = SimpleConsumer(
        config, group, {t: FilterExpression("*") for t in (topic, timer_topic)}, await_duration=2
    )
    _start_settled(consumer)
    try:
        plain_msg = _grpc_message(topic, b"plain", tag="T", keys="k1")
        plain_msg.add_property("color", "blue")
        plain = producer.send(plain_msg)
        # Whole seconds, as the client sends them (its delivery timestamp's seconds field).
        start_s = int(time.time())
        timer = producer.send(_grpc_message(timer_topic, b"at+2s", delivery_timestamp=start_s + 2))
        doomed = producer.send(
            _grpc_message(timer_topic, b"recalled", delivery_timestamp=start_s + 3)
        )
        # Due after the recalled one: once it is received, the recalled one would have been.
        producer.send(_grpc_message(timer_topic, b"at+4s", delivery_timestamp=start_s + 4))
        seen["beyond the longest delay"] = _grpc_outcome(
            lambda: producer.send(
                _grpc_message(
                    timer_topic, b"too-far", delivery_timestamp=start_s + FOUR_DAYS_MS // 1000
                )
            )
        )
        # Milliseconds where the client's field holds seconds (due in an hour, read as ms).
        seen["a delivery timestamp in milliseconds"] = _grpc_outcome(
            lambda: producer.send(
                _grpc_message(timer_topic, b"in-ms", delivery_timestamp=(start_s + 3600) * 1000)
            )
        )
        seen["recall handles given (plain, timer)"] = [
            bool(plain.recall_handle),
            bool(timer.recall_handle),
        ]
        seen["recall before due: the message's id"] = (
            producer.recall_message(timer_topic, doomed.recall_handle) == doomed.message_id
        )
        seen["recall again"] = _grpc_outcome(
            lambda: producer.recall_message(timer_topic, doomed.recall_handle)
        )
        # The recalled "recalled", due before "at+4s", would have come first.
        deliveries = _receive_all(consumer, {"plain", "at+4s"})
        seen["recall once delivered"] = _grpc_outcome(
            lambda: producer.recall_message(timer_topic, timer.recall_handle)
        )
    finally:
        consumer.shutdown()
        producer.shutdown()
    plains = [d for d in deliveries if d[0] == "plain"]
    seen["received"] = sorted({d[0] for d in deliveries})
    seen["plain: attempts"] = [d[1] for d in plains]
    msg = plains[0][2]
    seen["plain: tag, keys, property"] = [msg.tag, sorted(msg.keys), msg.properties.get("color")]
    timer_msg = next(d[2] for d in deliveries if d[0] == "at+2s")
    seen["timer: delivery timestamp kept"] = timer_msg.delivery_timestamp == (start_s + 2) * 1000
    return seen


def _start_settled(client: SimpleConsumer | GrpcProducer) -> None:
    """Start an official client and wait (`SETTINGS_WAIT_S` at most) for the endpoint's
    answer to its settings. The client's startup waits for it only in its push consumer, and
    RocketMQ 5.3.3's proxy fails a receive that comes before the settings ("settings is null",
    INTERNAL_SERVER_ERROR): a race of the client's, not an answer worth comparing."""
    client.startup()
    client._init_settings_event.wait(SETTINGS_WAIT_S)


def _receive_all(consumer: SimpleConsumer, until: set[str]) -> list[tuple[str, int, Any]]:
    """(body, attempt, message) of each delivery, each acked, until every body of `until`
    came (WAIT_S at most)."""
    deliveries: list[tuple[str, int, Any]] = []
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            received = consumer.receive(16, 10)
        except AioRpcError:  # a long poll past its deadline on a loaded box: poll again
            continue
        for msg in received:
            deliveries.append((msg.body.decode(), msg.delivery_attempt, msg))
            consumer.ack(msg)
        if until <= {d[0] for d in deliveries}:
            break
    return deliveries


async def grpc_python5_fifo(target: Target) -> Observation:
    """FIFO over gRPC with the official Python client: a FIFO topic, a group that consumes
    orderly, messages of message groups A (a1, a2) and B (b1); a SimpleConsumer receiving one
    message at a time leaves a1's first delivery unacknowledged. A's deliveries in order (a2
    only once a1 was acked), and that B's came."""
    assert target.grpc_endpoint is not None
    ns = target.namesrv
    topic, group = await new_topic(ns, message_type="FIFO"), unique("py5_fifo_g")
    async with Admin(config=config_for(ns)) as admin:
        _, addr = await master_addr(admin)
        await admin.instance.api.create_subscription_group(
            addr, SubscriptionGroupConfig(group_name=group, consume_message_orderly=True)
        )
    return await asyncio.to_thread(
        _on_own_loop, _grpc_python5_fifo_on, target.grpc_endpoint, topic, group
    )


def _grpc_python5_fifo_on(endpoint: str, topic: str, group: str) -> Observation:
    config = ClientConfiguration(endpoint, Credentials(), request_timeout=10)
    producer = GrpcProducer(config, (topic,))
    producer.startup()
    consumer = SimpleConsumer(config, group, {topic: FilterExpression("*")}, await_duration=2)
    _start_settled(consumer)
    deliveries: list[tuple[str, int]] = []
    try:
        for body, message_group in (("a1", "A"), ("a2", "A"), ("b1", "B")):
            producer.send(_grpc_message(topic, body.encode(), message_group=message_group))
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and not {"a2", "b1"} <= {d[0] for d in deliveries}:
            try:
                received = consumer.receive(1, 2)
            except AioRpcError:  # as in `_receive_all`
                continue
            for msg in received:
                body = msg.body.decode()
                if body != "a1" or any(d[0] == "a1" for d in deliveries):
                    consumer.ack(msg)
                deliveries.append((body, msg.delivery_attempt))
    finally:
        consumer.shutdown()
        producer.shutdown()
    return {
        "A: deliveries in order (body, attempt)": [
            [body, attempt] for body, attempt in deliveries if body.startswith("a")
        ],
        "B: delivered": [body for body, _ in deliveries if body.startswith("b")],
    }


async def lmq(target: Target) -> Observation:
    """Light message queues (RIP-28, a broker with enableLmq and enableMultiDispatch): sends
    naming %LMQ% queues (`Message.lmqs`, INNER_MULTI_DISPATCH), a delayed one, a batch, and two
    raw sends naming what no LMQ is (a name with a path, a plain name last; a plain name first
    is not sent: RocketMQ 5.3.3's dispatch thread fails on it, and on it again); each
    LMQ read from queue 0 with a `QueueReader` and a group (bodies, queue offsets,
    INNER_MULTI_QUEUE_OFFSET, min and max offsets), a pull parked on an LMQ, and a group's
    offset committed on one."""
    ns = target.namesrv
    topic = await new_topic(ns)
    a, b, c, d, e, f = (f"%LMQ%{unique(label)}" for label in "abcdef")
    seen: Observation = {}
    async with (
        reading_and_sending(ns, topic) as (reader, producer, admin),
        QueueReader(config=config_for(ns)) as queues,
    ):
        first = await producer.send(Message(topic, b"m1", lmqs=(a, b)))
        await producer.send(Message(topic, b"m2", lmqs=(b,)))
        await producer.send(Message(topic, b"m3", lmqs=(a, b, c)))
        await producer.send_batch([Message(topic, b"batched", lmqs=(f,))])
        await raw_send(admin, topic, b"path", properties={Prop.INNER_MULTI_DISPATCH: f"{c},{c}/x"})
        await raw_send(
            admin, topic, b"plain last", properties={Prop.INNER_MULTI_DISPATCH: f"{e},Plain"}
        )
        # Sent last: stored in the topic (and its LMQ) a level's second later, after the rest.
        await producer.send(Message(topic, b"delayed", delay_level=1, lmqs=(d,)))
        await reader.until(b"m1", b"m2", b"m3", b"delayed", b"batched", b"path", b"plain last")
        broker = first.message_queue.broker_name
        group = unique("lmq_g")
        # A pull parked at the end of c, a second before a message for c is sent (had it
        # not been parked yet, it would find the message all the same).
        parked_at = await queues.max_offset(lmq_queue(c, broker))
        parked = asyncio.ensure_future(
            queues.pull(lmq_queue(c, broker), parked_at, group=group, max_msgs=32, suspend=20)
        )
        await asyncio.sleep(1.0)
        await producer.send(Message(topic, b"woken", lmqs=(c,)))
        seen["c: a parked pull gets"] = [m.body.decode() for m in (await parked).messages]
        for label, name in zip("abcdef", (a, b, c, d, e, f), strict=True):
            mq = lmq_queue(name, broker)
            got = await queues.pull(mq, 0, group=group, max_msgs=32)
            seen[f"{label}: pull from 0"] = got.status.name
            # A copy stored in another topic (4.9.7 indexes a delayed message as held in the
            # schedule topic too) shows that topic: its offset there depends on earlier scenarios.
            seen[f"{label}: read (body, queue offset, INNER_MULTI_QUEUE_OFFSET)"] = [
                [
                    m.body.decode(),
                    m.queue_offset if m.topic == topic else m.topic,
                    m.properties.get(Prop.INNER_MULTI_QUEUE_OFFSET),
                ]
                for m in got.messages
            ]
            seen[f"{label}: min, max offset"] = [
                await queues.min_offset(mq),
                await queues.max_offset(mq),
            ]
        await queues.commit(group, lmq_queue(a, broker), 2)
        committed = await queues.committed(group, lmq_queue(a, broker))
        seen["a: the group's offset committed"] = committed
    by_body = {m.body.decode(): m for m in reader.got}
    seen["topic: INNER_MULTI_QUEUE_OFFSET by body"] = {
        body: m.properties.get(Prop.INNER_MULTI_QUEUE_OFFSET) for body, m in sorted(by_body.items())
    }
    return seen


# --------------------------------------------------------------------------- pop requests


async def pop_requests(target: Target) -> Observation:
    """The pop requests a client sends raw, against the one broker: NOTIFICATION 200054 (on a
    topic still empty, at once, and long-polled until a send), POLLING_INFO 200055 while that
    notification (group G) and a long-polled POP_MESSAGE (group P, any queue) wait: for P and
    queue -1, P and queue 0, G and queue -1; then BATCH_ACK_MESSAGE 200151 acking two of four
    messages G popped (each entry built from the messages' checkpoints, as RocketMQ's client
    builds it), and an empty batch.  Which acks took effect shows in what comes back once the
    invisible time (4 s) ran out."""
    ns = target.namesrv
    topic, group, popper = await new_topic(ns), unique("pop_req_g"), unique("pop_req_p")
    seen: Observation = {}
    async with Admin(config=config_for(ns)) as admin:
        broker_name, addr = await master_addr(admin)
        api = admin.instance.api

        async def call(code: int, header: Header | None = None, body: bytes = b"") -> Any:
            ext = header.to_ext() if header is not None else {}
            return await api.invoke(addr, RemotingCommand.request(code, ext, body), WAIT_S)

        async def polling(for_group: str, queue_id: int) -> int:
            header = PollingInfoRequestHeader(for_group, topic, queue_id)
            answer = await call(RequestCode.POLLING_INFO, header)
            return int(answer.ext_fields.get("pollingNum", -1))

        def notified(answer: Any) -> list[Any]:
            return [answer.code, answer.ext_fields.get("hasMsg")]

        # RocketMQ's broker waits until bornTime + pollTime: bornTime is the client's now.
        def now_ms() -> int:
            return int(time.time() * 1000)

        seen["notification, nothing sent, not waiting"] = notified(
            await call(
                RequestCode.NOTIFICATION, NotificationRequestHeader(group, topic, -1, 0, now_ms())
            )
        )
        notification = NotificationRequestHeader(group, topic, -1, 15_000, now_ms())
        waiting = asyncio.ensure_future(call(RequestCode.NOTIFICATION, notification))
        pop = PopMessageRequestHeader(popper, topic, -1, 1, 60_000, 15_000, now_ms(), 0, "TAG", "*")
        popping = asyncio.ensure_future(call(RequestCode.POP_MESSAGE, pop))
        async with asyncio.timeout(WAIT_S):
            while (parked := await polling(popper, -1)) < 1:
                await asyncio.sleep(0.1)
        seen["polling info while they wait: the pop's group, queue -1"] = parked
        seen["polling info: the pop's group, queue 0"] = await polling(popper, 0)
        seen["polling info: the notification's group, queue -1"] = await polling(group, -1)
        bodies = [f"m{i}" for i in range(4)]
        async with Producer(unique("pg"), config=config_for(ns)) as producer:
            for body in bodies:
                await producer.send(Message(topic, body.encode()))
        seen["the waiting notification, once a message came"] = notified(await waiting)
        seen["the waiting pop, once a message came"] = (await popping).code
        seen["polling info once the pop was answered"] = await polling(popper, -1)

        async with PopConsumer(group, config=config_for(ns)) as consumer:
            first = await _pop_until(consumer, topic, set(bodies), invisible=4.0)
            acked = [m for m in first if m.body in (b"m0", b"m2")]
            batch = _batch_ack_body(broker_name, group, acked)
            seen["batch ack of m0 and m2"] = (
                await call(RequestCode.BATCH_ACK_MESSAGE, None, batch)
            ).code
            empty = orjson.dumps({"brokerName": broker_name, "acks": []})
            seen["batch ack naming no ack"] = (
                await call(RequestCode.BATCH_ACK_MESSAGE, None, empty)
            ).code
            again = await _pop_until(consumer, topic, {"m1", "m3"}, invisible=60.0)
            seen["back after the invisible time (body, reconsume times)"] = sorted(
                [m.body.decode(), m.reconsume_times] for m in again
            )
            for m in again:
                await consumer.ack(m)
    return seen


def _batch_ack_body(broker_name: str, group: str, popped: list[PoppedMessage]) -> bytes:
    """BATCH_ACK_MESSAGE's body acking `popped`: one entry per checkpoint (its queue, start
    offset, pop time, revive queue), a bit per message at (offset - start offset), the bit
    set as `BitSet.toByteArray()` in base64."""
    entries: dict[tuple[int, int, int, int], list[int]] = {}
    checkpoints: dict[tuple[int, int, int, int], ExtraInfo] = {}
    for m in popped:
        ck = ExtraInfo.parse(m.checkpoint)
        key = (ck.queue_id, ck.ck_queue_offset, ck.pop_time, ck.revive_qid)
        entries.setdefault(key, []).append(m.message.queue_offset - ck.ck_queue_offset)
        checkpoints[key] = ck
    acks = []
    for key, bits in entries.items():
        ck = checkpoints[key]
        value = sum(1 << bit for bit in bits)
        acks.append(
            {
                "c": group,
                "t": popped[0].message.topic,
                "r": ck.retry,
                "so": ck.ck_queue_offset,
                "q": ck.queue_id,
                "rq": ck.revive_qid,
                "pt": ck.pop_time,
                "it": ck.invisible_time,
                "b": base64.b64encode(
                    value.to_bytes(max(1, (value.bit_length() + 7) // 8), "little")
                ).decode(),
            }
        )
    return orjson.dumps({"brokerName": broker_name, "acks": acks})


SCENARIOS5 = {
    "timers": timers,
    "recall": recall,
    "pop_remoting": pop_remoting,
    "pop_java53": pop_java53,
    "pop_requests": pop_requests,
    "pop_dead_letters": pop_dead_letters,
    "pop_orderly": pop_orderly,
    "grpc_python5": grpc_python5,
    "grpc_python5_fifo": grpc_python5_fifo,
    "lmq": lmq,
}
# Not in RocketMQ 4.9.7 (timers, recall and pop came with 5.x; gRPC is 5.x's proxy). LMQ came
# with 4.9.3 (RIP-28): `lmq` runs on both session brokers (`peers.rocketmq.LMQ_SETTINGS`).
SINCE_5 = set(SCENARIOS5) - {"lmq"}
