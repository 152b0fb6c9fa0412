"""The request layer and client instance over real sockets, against scripted peers.

These peers answer a handful of fixed commands so one client behaviour can be pinned down in
isolation (name-server failover, retrying a send on another broker, broker → client requests).
Everything end to end runs against the real name server and broker in the other test files.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable

import pytest

from longboat.client import ClientConfig, Message
from longboat.client._internal.instance import ClientInstance
from longboat.client.producer import Producer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import BrokerData, ConsumerData, QueueData, TopicRouteData
from longboat.protocol.headers import (
    ConsumerGroupHeader,
    ResetOffsetRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from longboat.protocol.table_bodies import encode_offset_table
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection, RemotingClient, RemotingServer, Router

Handler = Callable[[Connection, RemotingCommand], RemotingCommand | None]


async def serve(handlers: dict[int, Handler]) -> RemotingServer:
    router = Router("scripted")
    for code, handler in handlers.items():
        router.register(code, handler)
    server = RemotingServer(router, "127.0.0.1", 0)
    await server.start()
    return server


def dead_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def route_of(brokers: dict[str, str], queues: int = 2) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData(name, queues, queues) for name in brokers],
        broker_datas=[BrokerData("c", name, {0: addr}) for name, addr in brokers.items()],
    )


@pytest.fixture
async def servers() -> AsyncIterator[list[RemotingServer]]:
    started: list[RemotingServer] = []
    yield started
    for s in started:
        await s.close()


async def test_name_server_failover(servers: list[RemotingServer]) -> None:
    data = route_of({"b": "127.0.0.1:1"})
    ns = await serve(
        {RequestCode.GET_ROUTEINFO_BY_TOPIC: lambda c, r: r.make_response(body=data.to_json())}
    )
    servers.append(ns)
    config = ClientConfig([dead_addr(), f"127.0.0.1:{ns.port}"], instance_name="failover")
    instance = ClientInstance.acquire(config)
    try:
        route = await instance.route("T")
        assert route.master_addr("b") == "127.0.0.1:1"
        # The name server that answered is asked first from now on.
        assert instance.api._namesrvs.first == 1
    finally:
        await instance.release()


async def test_send_retries_on_another_broker(servers: list[RemotingServer]) -> None:
    seen: list[str] = []

    def refusing(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        seen.append("a")
        return req.make_response(ResponseCode.SERVICE_NOT_AVAILABLE, "broker a is stopping")

    def storing(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        seen.append("b")
        h = SendMessageRequestHeaderV2.from_ext(req.ext_fields)
        answer = SendMessageResponseHeader("00" * 16, h.queueId, 41, MSG_REGION="DefaultRegion")
        return req.make_response(ext_fields=answer.to_ext())

    a = await serve({RequestCode.SEND_MESSAGE_V2: refusing})
    b = await serve({RequestCode.SEND_MESSAGE_V2: storing})
    data = route_of({"a": f"127.0.0.1:{a.port}", "b": f"127.0.0.1:{b.port}"})
    ns = await serve(
        {RequestCode.GET_ROUTEINFO_BY_TOPIC: lambda c, r: r.make_response(body=data.to_json())}
    )
    servers += [a, b, ns]
    config = ClientConfig([f"127.0.0.1:{ns.port}"], instance_name="retry")
    async with Producer("pg", config=config) as producer:
        results = [await producer.send(Message("T", b"x")) for _ in range(4)]
    assert all(r.message_queue.broker_name == "b" and r.queue_offset == 41 for r in results)
    # Every attempt on a ends with the retry on b.
    assert seen.count("b") == 4 and all(
        seen[i + 1] == "b" for i, who in enumerate(seen) if who == "a"
    )


class _Member:
    group = "g1"

    def __init__(self) -> None:
        self.changed = asyncio.Event()
        self.reset = asyncio.Event()
        self.resets: list[tuple[str, dict[MessageQueue, int]]] = []

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(group_name=self.group)

    def on_consumer_ids_changed(self) -> None:
        self.changed.set()

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        self.resets.append((topic, offsets))
        self.reset.set()


async def test_broker_notices_reach_the_consumer(servers: list[RemotingServer]) -> None:
    heartbeats: list[Connection] = []

    def heartbeat(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        heartbeats.append(conn)
        return req.make_response()

    broker = await serve({RequestCode.HEART_BEAT: heartbeat})
    data = route_of({"b": f"127.0.0.1:{broker.port}"})
    ns = await serve(
        {RequestCode.GET_ROUTEINFO_BY_TOPIC: lambda c, r: r.make_response(body=data.to_json())}
    )
    servers += [broker, ns]
    config = ClientConfig([f"127.0.0.1:{ns.port}"], instance_name="notice")
    instance = ClientInstance.acquire(config, consumer_group="g1")
    member = _Member()
    instance.register_consumer(member)
    try:
        await instance.route("T")
        await instance.heartbeat_all()
        assert heartbeats, "the heartbeat reached the broker"
        conn = heartbeats[-1]
        notice = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, ConsumerGroupHeader("g1").to_ext()
        )
        conn.oneway(notice)
        await asyncio.wait_for(member.changed.wait(), 5)
        # A broker-driven reset reaches the group's consumer with its table.
        table = {MessageQueue("T", "b", 0): 7}
        reset = RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            ResetOffsetRequestHeader("T", "g1", -1).to_ext(),
            encode_offset_table(table),
        )
        conn.oneway(reset)
        await asyncio.wait_for(member.reset.wait(), 5)
        assert member.resets == [("T", table)]
        # A request the client does not serve is answered, not left hanging.
        answer = await conn.request(
            RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT), 5
        )
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        await instance.unregister_consumer("g1")
        await instance.release()


async def test_members_of_one_group_get_distinct_client_ids() -> None:
    config = ClientConfig(["127.0.0.1:1"])
    first = ClientInstance.acquire(config, consumer_group="g")
    second = ClientInstance.acquire(config, consumer_group="g")
    other_group = ClientInstance.acquire(config, consumer_group="h")
    try:
        assert first is not second and first.client_id != second.client_id
        assert second.client_id.endswith("#2")
        assert other_group is first
    finally:
        for inst in (first, second, other_group):
            await inst.release()
    assert first.closed and second.closed


async def test_a_request_cancelled_as_its_answer_arrives_stays_cancelled(
    servers: list[RemotingServer],
) -> None:
    """A pull loop stopped at the moment its pull was answered must stop; a swallowed
    cancellation left it pulling forever and its consumer's shutdown hanging."""
    broker = await serve({RequestCode.GET_MAX_OFFSET: lambda c, r: r.make_response()})
    servers.append(broker)
    client = RemotingClient()
    conn = await client.connection(f"127.0.0.1:{broker.port}")
    request = asyncio.create_task(
        conn.request(RemotingCommand.request(RequestCode.GET_MAX_OFFSET), 5)
    )
    loop = asyncio.get_running_loop()
    answers: list[asyncio.Future[RemotingCommand]] = []

    def cancel_as_answered() -> None:
        # Runs once per loop turn; cancels in the same turn the answer lands in its future,
        # before the waiting request has seen it.
        answers.extend(f for f in conn._pending.values() if f not in answers)
        if answers and answers[0].done():
            request.cancel()
        else:
            loop.call_soon(cancel_as_answered)

    loop.call_soon(cancel_as_answered)
    try:
        with pytest.raises(asyncio.CancelledError):
            await request
        assert answers[0].done() and not answers[0].cancelled()  # the answer had arrived
    finally:
        await client.close()
