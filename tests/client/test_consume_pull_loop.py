"""The pull loop against a scripted broker over real sockets: each pull outcome and the back-off.

The scripted broker answers PULL_MESSAGE from a list of canned answers, so each outcome the
loop must handle (found, nothing new, nothing matched, offset moved, error) is pinned down in
isolation; the long-polling broker itself is exercised end to end in test_push_e2e.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from longboat.client import ClientConfig
from longboat.client._internal.instance import ClientInstance
from longboat.client.consume.process_queue import ProcessQueue
from longboat.client.consume.pull_loop import PullLoop, PullSettings, Subscription
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import BrokerData, QueueData, TopicRouteData
from longboat.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from longboat.protocol.message import MessageExt, encode_message
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import PullSysFlag
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection, RemotingServer, Router

MQ = MessageQueue("T", "b", 0)


def record(offset: int, tag: str) -> bytes:
    return encode_message(
        MessageExt("T", b"m%d" % offset, queue_offset=offset, properties={Prop.TAGS: tag})
    )


class ScriptedBroker:
    """Name server and broker in one: the route of T, and pulls answered from `answers`."""

    def __init__(self, answers: list[tuple[int, int, bytes]]) -> None:
        self.answers = answers
        self.pulls: list[PullMessageRequestHeader] = []
        self.pulled = asyncio.Event()
        self.server: RemotingServer | None = None

    async def start(self) -> str:
        router = Router("scripted broker")
        router.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self._route)
        router.register(RequestCode.PULL_MESSAGE, self._pull)
        self.server = RemotingServer(router, "127.0.0.1", 0)
        await self.server.start()
        return f"127.0.0.1:{self.server.port}"

    def _route(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        assert self.server is not None
        addr = f"127.0.0.1:{self.server.port}"
        data = TopicRouteData(
            queue_datas=[QueueData("b", 1, 1)], broker_datas=[BrokerData("c", "b", {0: addr})]
        )
        return cmd.make_response(body=data.to_json())

    def _pull(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        self.pulls.append(PullMessageRequestHeader.from_ext(cmd.ext_fields))
        self.pulled.set()
        if not self.answers:
            return None  # held forever, as a long poll with nothing to say
        code, next_offset, body = self.answers.pop(0)
        header = PullMessageResponseHeader(0, next_offset, 0, 100)
        return cmd.make_response(code, ext_fields=header.to_ext(), body=body)


@pytest.fixture
async def broker_factory() -> AsyncIterator[Callable[..., ScriptedBroker]]:
    made: list[ScriptedBroker] = []

    def make(answers: list[tuple[int, int, bytes]]) -> ScriptedBroker:
        made.append(ScriptedBroker(answers))
        return made[-1]

    yield make
    for b in made:
        if b.server is not None:
            await b.server.close()


async def run_loop(
    broker: ScriptedBroker, start: int, until: Callable[[], bool], **settings: Any
) -> tuple[PullLoop, list[list[MessageExt]], list[int]]:
    addr = await broker.start()
    instance = ClientInstance.acquire(
        ClientConfig([addr], client_ip="127.0.0.1", instance_name=f"pull-loop-{id(broker)}")
    )
    delivered: list[list[MessageExt]] = []
    moved: list[int] = []

    async def start_offset() -> int:
        await instance.route("T")
        return start

    loop = PullLoop(
        instance,
        "g",
        MQ,
        ProcessQueue(),
        Subscription(TagExpression.parse("A || B"), 42),
        PullSettings(**settings),
        start_offset=start_offset,
        deliver=lambda mq, pq, msgs: delivered.append(msgs),
        offset_moved=lambda mq, offset: moved.append(offset),
        commit_offset=lambda mq: 3,
        running=asyncio.Event(),
    )
    loop._running.set()
    loop.start()
    try:
        async with asyncio.timeout(20):
            while not until():
                broker.pulled.clear()
                await broker.pulled.wait()
            await asyncio.sleep(0.05)
    finally:
        await loop.stop()
        await instance.release()
    return loop, delivered, moved


async def test_each_pull_outcome(broker_factory: Callable[..., ScriptedBroker]) -> None:
    found = record(7, "A") + record(8, "C") + record(9, "B")  # C: a hash collision, say
    broker = broker_factory(
        [
            (ResponseCode.PULL_OFFSET_MOVED, 5, b""),
            (ResponseCode.PULL_RETRY_IMMEDIATELY, 7, b""),
            (ResponseCode.SUCCESS, 10, found),
            (ResponseCode.PULL_NOT_FOUND, 10, b""),
        ]
    )
    loop, delivered, moved = await run_loop(broker, 0, lambda: len(broker.pulls) >= 5)
    assert [p.queueOffset for p in broker.pulls] == [0, 5, 7, 10, 10]
    first = broker.pulls[0]
    assert first.subscription == "A || B" and first.subVersion == 42
    assert first.sysFlag & PullSysFlag.SUSPEND and first.sysFlag & PullSysFlag.SUBSCRIPTION
    assert first.sysFlag & PullSysFlag.COMMIT_OFFSET and first.commitOffset == 3
    assert first.suspendTimeoutMillis == 15000 and first.maxMsgNums == 32
    # OFFSET_MOVED to 5, then NO_MATCHED_MSG to 7 with nothing cached: both are the
    # committed offset (correctTagsOffset); the NO_NEW_MSG at 10 is not (7 and 9 pending).
    assert moved == [5, 7]
    # The exact tag check dropped C; the process queue still moved past it.
    assert [[m.queue_offset for m in batch] for batch in delivered] == [[7, 9]]
    assert loop.pq.committed_offset == 7
    loop.pq.remove(delivered[0])
    assert loop.pq.committed_offset == 10


async def test_errors_back_off_instead_of_spinning(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = broker_factory([(ResponseCode.SYSTEM_ERROR, 0, b"")] * 100)
    loop, _, _ = await run_loop(
        broker, 0, lambda: len(broker.pulls) >= 3, error_backoff=0.1, max_backoff=0.4
    )
    # Doubling back-off: three failed pulls took at least 0.1 + 0.2 s (x0.8 jitter) between
    # them, so the loop waited between attempts rather than spinning.
    assert len(broker.pulls) == 3
    assert loop.failures >= 2
