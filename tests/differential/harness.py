"""The differential harness: a target, what an observation is, and the helpers scenarios share.

A scenario (differential/scenarios.py) is a function of a `Target` returning an `Observation`,
a flat mapping of field name -> JSON-able value of what a user sees; `observe` runs one. The
helpers make topics, send the raw requests the client would refuse, and reduce a refusal to
what a user can rely on (its response code, whether the remark names the subject).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from client.client_e2e import config_for, unique
from client.push_support import positioned
from longboat.client.admin import Admin
from longboat.client.consume_from import ConsumeFrom
from longboat.client.errors import BrokerError, ClientError
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.message import Message, SendResult
from longboat.client.producer import Producer
from longboat.client.push import PushConsumer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import CreateTopicRequestHeader, SendMessageRequestHeaderV2
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import properties_to_string
from longboat.protocol.topic_names import AUTO_CREATE_TOPIC_KEY
from longboat.protocol.types import PERM_READ, PERM_WRITE, MessageQueue

Observation = dict[str, Any]
WAIT_S = 30.0


@dataclass(frozen=True)
class Target:
    """A cluster to run a scenario against: its name server (remoting) and its RocketMQ 5
    gRPC endpoint (Longboat's broker's, or RocketMQ 5's proxy; None where there is none)."""

    namesrv: str
    grpc_endpoint: str | None = None


Scenario = Callable[[Target], Awaitable[Observation]]


async def new_topic(
    ns: str, queues: int = 1, perm: int = PERM_READ | PERM_WRITE, message_type: str | None = None
) -> str:
    """A new topic on the one master; with `message_type`, the topic attribute
    `message.type` RocketMQ 5's proxy checks a gRPC send against (NORMAL when unset, so a
    DELAY or FIFO message needs a topic of its type); Longboat's broker ignores it."""
    topic = unique("Diff")
    async with Admin(config=config_for(ns)) as admin:
        await admin.create_topic(topic, queue_nums=queues, perm=perm)
        if message_type is not None:
            _, addr = await master_addr(admin)
            header = CreateTopicRequestHeader(
                topic=topic,
                defaultTopic=AUTO_CREATE_TOPIC_KEY,
                readQueueNums=queues,
                writeQueueNums=queues,
                perm=perm,
            )
            ext = {**header.to_ext(), "attributes": f"+message.type={message_type}"}
            command = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)
            answer = await admin.instance.api.invoke(addr, command)
            assert answer.code == ResponseCode.SUCCESS, answer.remark
    return topic


def refusal(exc: BaseException, *subjects: str) -> Observation:
    """What a user learns from a refusal: its response code, and whether the remark names the
    topic or group concerned (the wording itself is each system's own)."""
    if isinstance(exc, BrokerError):
        code = exc.code_name if exc.code_name != "UNKNOWN" else str(exc.code)
        return {"code": code, "names_subject": all(s in exc.remark for s in subjects)}
    return {"code": type(exc).__name__, "names_subject": all(s in str(exc) for s in subjects)}


async def outcome(action: Awaitable[object], *subjects: str) -> Observation:
    """ "ok", or the refusal `action` met."""
    try:
        await action
    except ClientError as exc:
        return refusal(exc, *subjects)
    return {"code": "ok"}


async def master_addr(admin: Admin) -> tuple[str, str]:
    """The one master broker's name and address."""
    ((name, addr),) = (await admin.master_brokers()).items()
    return name, addr


async def raw_send(
    admin: Admin,
    topic: str,
    body: bytes,
    queue_id: int = 0,
    properties: dict[str, str] | None = None,
) -> SendResult:
    """SEND_MESSAGE_V2 as the producer would send it, without the client's own checks."""
    name, addr = await master_addr(admin)
    header = SendMessageRequestHeaderV2(
        producerGroup=unique("raw_pg"),
        topic=topic,
        defaultTopic=AUTO_CREATE_TOPIC_KEY,
        defaultTopicQueueNums=4,
        queueId=queue_id,
        sysFlag=0,
        bornTimestamp=int(time.time() * 1000),
        flag=0,
        properties=properties_to_string({"UNIQ_KEY": unique("RAW"), **(properties or {})}),
        reconsumeTimes=0,
        unitMode=False,
    )
    mq = MessageQueue(topic, name, queue_id)
    return await admin.instance.api.send(addr, mq, header, body, msg_id="raw", timeout=10)


class TopicReader:
    """A new group reading a one-queue topic from its first offset, started before anything
    is sent: what it reads is everything the topic stores, in offset order (`got`)."""

    def __init__(self, ns: str, topic: str) -> None:
        self.got: list[MessageExt] = []
        self._consumer = LitePullConsumer(
            unique("reader_g"), config=config_for(ns), consume_from=ConsumeFrom.FIRST_OFFSET
        )
        self._consumer.subscribe(topic)

    async def __aenter__(self) -> TopicReader:
        await self._consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.shutdown()

    async def until(self, *bodies: bytes) -> list[MessageExt]:
        """Read on until every one of `bodies` came (WAIT_S at most); everything read."""
        async with asyncio.timeout(WAIT_S):
            while not set(bodies) <= {m.body for m in self.got}:
                self.got.extend(await self._consumer.poll(timeout=1))
        return self.got

    def bodies(self) -> list[str]:
        return [m.body.decode() for m in self.got]

    def message(self, body: bytes) -> MessageExt:
        """The first message read with `body`."""
        return next(m for m in self.got if m.body == body)


def queue_bodies(msgs: list[MessageExt]) -> list[list[str]]:
    """Bodies per queue in offset order, queues in the order of their first message."""
    by_queue: dict[int, list[MessageExt]] = {}
    for m in msgs:
        by_queue.setdefault(m.queue_id, []).append(m)
    return [
        [m.body.decode() for m in sorted(q, key=lambda m: m.queue_offset)]
        for q in by_queue.values()
    ]


async def subscribed(
    ns: str, topic: str, last: str, expression: str = "*", sql: str | None = None
) -> list[str]:
    """Bodies a new group subscribed to the one-queue `topic` gets from its first offset, up
    to the body `last` (sent last of those that match: nothing can follow it)."""
    consumer = LitePullConsumer(
        unique("filter_g"), config=config_for(ns), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.subscribe(topic, expression, sql=sql)
    await consumer.start()
    got: list[str] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while last not in got and time.monotonic() < deadline:
            got += [m.body.decode() for m in await consumer.poll(timeout=1)]
    finally:
        await consumer.shutdown()
    return got


@contextlib.asynccontextmanager
async def reading_and_sending(
    ns: str, topic: str
) -> AsyncIterator[tuple[TopicReader, Producer, Admin]]:
    """A `TopicReader` of `topic` (started first), a producer, and an admin for raw sends."""
    async with (
        TopicReader(ns, topic) as reader,
        Producer(unique("pg"), config=config_for(ns)) as producer,
        Admin(config=config_for(ns)) as admin,
    ):
        yield reader, producer, admin


async def send_around_a_time(
    producer: Producer, topic: str, early: list[str], late: list[str], gap_s: float = 0.05
) -> int:
    """Send `early`, then `late`; the time (epoch ms) between them, `gap_s` after the last
    early message was sent and about 50 ms before the first late one."""
    for body in early:
        await producer.send(Message(topic, body.encode()))
    await asyncio.sleep(gap_s)
    between_ms = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    for body in late:
        await producer.send(Message(topic, body.encode()))
    return between_ms


async def positioned_then_send(
    consumer: PushConsumer, ns: str, topic: str, bodies: tuple[str, ...], keyed: bool = False
) -> None:
    """Once the started `consumer` knows where each of its queues starts, send `bodies` to
    `topic` (each its own key when `keyed`), so it gets every one of them."""
    await positioned(consumer)
    async with Producer(unique("pg"), config=config_for(ns)) as producer:
        for body in bodies:
            await producer.send(Message(topic, body.encode(), keys=[body] if keyed else None))


async def observe(scenario: Scenario, target: Target) -> Observation:
    """Run `scenario` against `target`; its observation flattened one level (a field holding
    a mapping becomes ``field.key`` fields), so each difference is one row."""
    flat: Observation = {}
    for name, value in (await scenario(target)).items():
        if isinstance(value, dict):
            flat.update({f"{name}.{k}": v for k, v in value.items()})
        else:
            flat[name] = value
    return flat
