"""A bare protocol client for broker and name-server tests: requests built from our typed headers,
sent with `longboat.remoting`, answers returned as they came off the wire.

The client packages are deliberately not used here: these tests prove the servers against the
protocol itself, so a client-side workaround cannot hide a server bug.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.assignment_bodies import QueryAssignmentRequest
from longboat.protocol.batch import BatchItem, encode_batch
from longboat.protocol.bodies import ConsumerData, HeartbeatData, SubscriptionData
from longboat.protocol.header_fields import Header
from longboat.protocol.headers import (
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from longboat.protocol.message import MessageExt, decode_records
from longboat.protocol.properties import Prop, properties_to_string
from longboat.remoting import RemotingClient, Router

TIMEOUT_S = 10.0


class Wire:
    """One connection to one server (a client per `Wire`, so two `Wire`s are two sockets)."""

    def __init__(self, addr: str, router: Router | None = None) -> None:
        self.addr = addr
        self.client = RemotingClient(router)

    async def call(
        self,
        code: int,
        header: Header | dict[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float = TIMEOUT_S,
        version: int | None = None,
    ) -> RemotingCommand:
        """One request; `version` poses as a client of that protocol version."""
        ext = header.to_ext() if isinstance(header, Header) else dict(header or {})
        cmd = RemotingCommand.request(code, ext, body)
        if version is not None:
            cmd.version = version
        return await self.client.request(self.addr, cmd, timeout)

    async def send(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        queue_id: int = 0,
        props: dict[str, str] | None = None,
    ) -> RemotingCommand:
        properties = dict(props or {})
        if tags is not None:
            properties[Prop.TAGS] = tags
        return await self.call(
            RequestCode.SEND_MESSAGE_V2, send_header(topic, queue_id, properties), body
        )

    async def send_batch(
        self, topic: str, bodies: list[bytes], *, queue_id: int = 0, tags: str | None = None
    ) -> RemotingCommand:
        props = {Prop.TAGS: tags} if tags is not None else {}
        items = [BatchItem(body, dict(props)) for body in bodies]
        header = send_header(topic, queue_id, {}, batch=True)
        return await self.call(RequestCode.SEND_BATCH_MESSAGE, header, encode_batch(items))

    async def pull(
        self, topic: str, queue_id: int, offset: int, *, timeout: float = TIMEOUT_S, **options: Any
    ) -> RemotingCommand:
        """PULL_MESSAGE; `options` are `pull_header`'s (group, subscription, suspend_ms, ...)."""
        header = pull_header(topic, queue_id, offset, **options)
        return await self.call(RequestCode.PULL_MESSAGE, header, timeout=timeout)

    async def heartbeat(
        self, client_id: str, group: str, topic: str, expr: str = "*", *, sql: str | None = None
    ) -> None:
        """A consumer heartbeat subscribing by tag `expr`, or by the SQL92 `sql`."""
        sub = (
            SubscriptionData.of(topic, expr, 1)
            if sql is None
            else SubscriptionData.sql92(topic, sql, 1)
        )
        data = HeartbeatData(
            client_id, consumer_data_set=[ConsumerData(group, subscription_data_set=[sub])]
        )
        response = await self.call(RequestCode.HEART_BEAT, body=data.to_json())
        assert response.code == 0, response.remark

    async def assignments(self, query: QueryAssignmentRequest) -> list[dict[str, Any]] | None:
        """QUERY_ASSIGNMENT: the answer's assignments as sent (each {"messageQueue": ...,
        "mode": ...}); None when it holds none (no valid answer: the client keeps its own)."""
        response = await self.call(RequestCode.QUERY_ASSIGNMENT, body=query.to_json())
        assert response.code == ResponseCode.SUCCESS, response.remark
        found: list[dict[str, Any]] | None = orjson.loads(response.body).get(
            "messageQueueAssignments"
        )
        return found

    async def query_offset(
        self, group: str, topic: str, queue_id: int, *, set_zero: bool | None = None
    ) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader(group, topic, queue_id, set_zero)
        return await self.call(RequestCode.QUERY_CONSUMER_OFFSET, header)

    async def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        header = UpdateConsumerOffsetRequestHeader(group, topic, queue_id, offset)
        response = await self.call(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        assert response.code == 0, response.remark

    async def pull_until(
        self, topic: str, last: bytes, *, group: str, timeout_s: float = 30.0
    ) -> list[MessageExt]:
        """Every message of queue 0 of `topic` from its start, until `last` is among them
        (a queue that is not there yet is asked again)."""
        got: list[MessageExt] = []
        async with asyncio.timeout(timeout_s):
            while all(m.body != last for m in got):
                answer = await self.pull(topic, 0, len(got), group=group)
                if answer.code == 0:
                    got += records(answer)
                else:
                    await asyncio.sleep(0.1)
        return got

    async def close(self) -> None:
        await self.client.close()


def send_header(
    topic: str, queue_id: int, props: dict[str, str], *, batch: bool = False
) -> SendMessageRequestHeaderV2:
    return SendMessageRequestHeaderV2(
        producerGroup="pg",
        topic=topic,
        defaultTopic="TBW102",
        defaultTopicQueueNums=8,
        queueId=queue_id,
        sysFlag=0,
        bornTimestamp=int(time.time() * 1000),
        flag=0,
        properties=properties_to_string(props),
        reconsumeTimes=0,
        batch=batch or None,
    )


def pull_header(
    topic: str,
    queue_id: int,
    offset: int,
    *,
    group: str = "g",
    subscription: str | None = "*",
    suspend_ms: int = 0,
    max_nums: int = 32,
    commit_offset: int = -1,
    sub_version: int = 0,
    expression_type: str = "TAG",
) -> PullMessageRequestHeader:
    """A pull; `subscription=None` leaves the subscription to the group's heartbeat."""
    return PullMessageRequestHeader.pulling(
        group=group,
        topic=topic,
        queue_id=queue_id,
        offset=offset,
        max_msgs=max_nums,
        suspend_ms=suspend_ms,
        commit_offset=commit_offset if commit_offset >= 0 else None,
        subscription=subscription,
        expression_type=expression_type,
        sub_version=sub_version,
    )


def pulled(response: RemotingCommand) -> PullMessageResponseHeader:
    return PullMessageResponseHeader.from_ext(response.ext_fields)


def records(response: RemotingCommand) -> list[MessageExt]:
    return decode_records(response.body) if response.body else []


def sent(response: RemotingCommand) -> SendMessageResponseHeader:
    assert response.code == 0, f"send refused: {response.code} {response.remark}"
    return SendMessageResponseHeader.from_ext(response.ext_fields)


def offset_of(response: RemotingCommand) -> int:
    assert response.code == 0, f"{response.code} {response.remark}"
    return OffsetResponseHeader.from_ext(response.ext_fields).offset


async def eventually(
    check: Callable[[], bool] | Callable[[], Awaitable[bool]],
    what: str,
    timeout: float = 20.0,
    poll: float = 0.01,
) -> None:
    """Wait until `check()` holds (state owned by another thread has no event to await)."""
    deadline = time.monotonic() + timeout
    while True:
        result: Any = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(poll)
