"""Our request layer against the frames captured from the real client ali-ons 3.12.0 (a codec test).

A replay server on loopback answers each request of our `ClientAPI` with the captured answer to
the same request of ali-ons (its opaque renumbered), and records what we sent.  Two things are
checked per operation:

* the request we write carries every field the real client wrote, with the same value (ours may
  add fields Java 4.x clients also send, such as `expressionType`, or UNIQ_KEY in properties);
* the answer the real client accepted decodes through our request layer into the right result
  (routes with bare integer keys, not-found codes and their remark, long-poll answers, a pull
  answer carrying records, a send answer).

What this does not prove: the captured answers come from the recording server that was used
for the capture, not from a real RocketMQ broker (none can be run here), so it is no end-to-end
test against RocketMQ; see "Against a real RocketMQ broker" in docs/client.md.
"""

from __future__ import annotations

import zlib
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from longboat.client import ClientConfig, Message, NoRouteError, PullResult, PullStatus
from longboat.client._internal.api import ClientAPI
from longboat.client.producer import Producer
from longboat.protocol import FrameDecoder, RemotingCommand
from longboat.protocol.bodies import HeartbeatData
from longboat.protocol.headers import PullMessageRequestHeader
from longboat.protocol.properties import Prop, string_to_properties
from longboat.protocol.sysflags import MessageSysFlag, PullSysFlag
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection, RemotingClient, RemotingServer, Router
from protocol.vector_data import Vector, java_ext, load_vectors

GROUP = "CAP_CONSUMER_GROUP"
Q0 = MessageQueue("CAP_TOPIC", "broker-a", 0)


def _decode(frame: bytes) -> RemotingCommand:
    decoder = FrameDecoder()
    decoder.feed(frame)
    cmd = decoder.next_command()
    assert cmd is not None
    return cmd


def captured(file: str, seq: int) -> tuple[Vector, RemotingCommand]:
    """The request at `seq` of capture `file` and the answer it got (same connection, opaque)."""
    request = next(v for v in load_vectors() if v.file == file and v.seq == seq)
    assert request.direction == "c2s"
    answer = next(
        v
        for v in load_vectors()
        if v.file == file
        and v.direction == "s2c"
        and v.conn == request.conn
        and v.header["opaque"] == request.header["opaque"]
    )
    return request, _decode(answer.frame)


class Replay:
    """Answers each request code with the captured answers queued for it, in order."""

    def __init__(self) -> None:
        self.router = Router("replay")
        self.answers: dict[int, deque[RemotingCommand]] = defaultdict(deque)
        self.requests: list[RemotingCommand] = []
        self.server = RemotingServer(self.router, "127.0.0.1", 0)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def expect(self, file: str, seq: int) -> Vector:
        """Queue the captured answer to request `seq`; returns the real client's request."""
        request, answer = captured(file, seq)
        if request.code not in self.answers:
            self.router.register(request.code, self._answer)
        self.answers[request.code].append(answer)
        return request

    def _answer(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        self.requests.append(request)
        answer = self.answers[request.code].popleft()
        answer.opaque = request.opaque
        return answer


@pytest.fixture
async def replay() -> AsyncIterator[tuple[Replay, ClientAPI]]:
    server = Replay()
    await server.server.start()
    remoting = RemotingClient()
    try:
        yield server, ClientAPI(remoting, ClientConfig([server.addr]))
    finally:
        await remoting.close()
        await server.server.close()


def assert_carries(ours: RemotingCommand, theirs: Vector, *, differ: tuple[str, ...] = ()) -> None:
    """Every field of the real client's request is in ours with the same value."""
    assert ours.code == theirs.code
    expected = java_ext(theirs.header.get("extFields"))
    for key, value in expected.items():
        if key not in differ:
            assert ours.ext_fields.get(key) == value, (theirs.name, key)
    assert set(differ) <= set(expected) <= set(ours.ext_fields)


async def test_routes_found_and_missing(replay: tuple[Replay, ClientAPI]) -> None:
    server, api = replay
    theirs = server.expect("producer", 1)
    route = await api.get_route("CAP_TOPIC")
    assert_carries(server.requests[-1], theirs)
    # The captured route uses fastjson's bare integer keys for broker ids.
    (broker,) = route.broker_datas
    assert (broker.broker_name, broker.broker_addrs) == ("broker-a", {0: "127.0.0.1:20911"})
    (queues,) = route.queue_datas
    assert (queues.read_queue_nums, queues.write_queue_nums, queues.perm) == (4, 4, 6)

    theirs = server.expect("producer_topic_not_exist", 1)
    with pytest.raises(NoRouteError) as missing:
        await api.get_route("CAP_MISSING")
    assert_carries(server.requests[-1], theirs)
    assert missing.value.code == 17 and "CAP_MISSING" in str(missing.value)


async def test_sends_and_their_answers(replay: tuple[Replay, ClientAPI]) -> None:
    server, api = replay
    producer = Producer("CAP_PRODUCER_GROUP", config=ClientConfig([server.addr]))
    for seq, msg in (
        (3, Message("CAP_TOPIC", b"hello TagA", tags="TagA", keys=["cap-key-1", "second-key"])),
        (7, None),  # the body over 4 KiB, compressed by both clients
    ):
        theirs = server.expect("producer", seq)
        if msg is None:
            msg = Message(
                "CAP_TOPIC", zlib.decompress(theirs.body), tags="TagA", keys="cap-key-big"
            )
        header, body, uniq = producer._prepare(msg)
        header = replace(header, queueId=theirs.header["extFields"]["e"])
        mq = MessageQueue("CAP_TOPIC", "broker-a", header.queueId)
        result = await api.send(server.addr, mq, header, body, msg_id=uniq, timeout=3)
        ours = server.requests[-1]
        # Born timestamps differ, our properties add UNIQ_KEY to the real client's, and we ask
        # for 8 queues when a send auto-creates the topic where Java asks for 4 (docs/cli.md,
        # "Queues of a new topic").
        assert_carries(ours, theirs, differ=("d", "g", "i"))
        assert str(theirs.header["extFields"]["d"]) == "4" and ours.ext_fields["d"] == "8"
        their_props = string_to_properties(theirs.header["extFields"]["i"])
        assert string_to_properties(ours.ext_fields["i"]) == their_props | {Prop.UNIQ_KEY: uniq}
        compressed = bool(int(ours.ext_fields["f"]) & MessageSysFlag.COMPRESSED)
        assert compressed == (seq == 7)
        assert (zlib.decompress(ours.body) if compressed else ours.body) == msg.body
        assert result.ok and result.msg_id == uniq
        assert result.message_queue == mq and result.queue_offset == 0
        answer = captured("producer", seq)[1]
        assert result.offset_msg_id == answer.ext_fields["msgId"]


async def test_consumer_requests_and_answers(replay: tuple[Replay, ClientAPI]) -> None:
    server, api = replay
    theirs = server.expect("consumer", 5)
    ids = await api.get_consumer_ids(server.addr, GROUP)
    assert_carries(server.requests[-1], theirs)
    assert ids and all("@" in i for i in ids)

    # A new group: the real client got QUERY_NOT_FOUND (22) and its remark; we read None.
    theirs = server.expect("consumer", 7)
    assert await api.query_consumer_offset(server.addr, GROUP, Q0) is None
    assert_carries(server.requests[-1], theirs)
    theirs = server.expect("consumer_retry", 7)
    assert await api.query_consumer_offset(server.addr, GROUP, Q0) == 0
    assert_carries(server.requests[-1], theirs)

    theirs = server.expect("consumer", 9)
    assert await api.get_max_offset(server.addr, Q0) == 0
    assert_carries(server.requests[-1], theirs)

    theirs = server.expect("consumer", 50)
    await api.update_consumer_offset(server.addr, GROUP, Q0, -1)
    assert_carries(server.requests[-1], theirs)


async def pull_as_they_did(api: ClientAPI, addr: str, theirs: Vector) -> PullResult:
    """The real client's pull made through our keyword builder (which must write the same
    header, plus `expressionType` as Java clients send it)."""
    h = PullMessageRequestHeader.from_ext(java_ext(theirs.header["extFields"]))
    flag = h.sysFlag
    assert flag & PullSysFlag.SUBSCRIPTION  # ours always carries the subscription
    return await api.pull(
        addr,
        MessageQueue(h.topic, "broker-a", h.queueId),
        h.queueOffset,
        group=h.consumerGroup,
        max_msgs=h.maxMsgNums,
        timeout=3,
        expression=h.subscription or "*",
        sub_version=h.subVersion,
        suspend=h.suspendTimeoutMillis / 1000 if flag & PullSysFlag.SUSPEND else 0,
        commit_offset=h.commitOffset if flag & PullSysFlag.COMMIT_OFFSET else None,
        lite=bool(flag & PullSysFlag.LITE_PULL_MESSAGE),
    )


async def test_pulls_long_polls_and_send_back(replay: tuple[Replay, ClientAPI]) -> None:
    server, api = replay
    # A held pull that ended with nothing new.
    request = server.expect("consumer_retry", 37)
    empty = await pull_as_they_did(api, server.addr, request)
    assert_carries(server.requests[-1], request)
    assert empty.status is PullStatus.NO_NEW_MSG and empty.messages == []

    # A pull answer with a record: decoded, tag-checked, offsets attached.
    theirs = server.expect("consumer_retry", 11)
    found = await pull_as_they_did(api, server.addr, theirs)
    assert_carries(server.requests[-1], theirs)
    assert found.status is PullStatus.FOUND
    assert (found.next_begin_offset, found.min_offset, found.max_offset) == (1, 0, 1)
    (msg,) = found.messages
    assert (msg.topic, msg.queue_offset, msg.commit_log_offset) == ("CAP_TOPIC", 0, 300)
    assert (msg.tags, msg.keys, msg.body) == ("TagA", "inj-key-1", b"injected by recorder")
    assert msg.properties[Prop.MAX_OFFSET] == "1"

    # That message sent back for a retry: the same header the real client wrote.
    theirs = server.expect("consumer_retry", 25)
    await api.send_back(server.addr, msg, GROUP, max_reconsume_times=16)
    assert_carries(server.requests[-1], theirs)


async def test_heartbeat_and_unregister(replay: tuple[Replay, ClientAPI]) -> None:
    server, api = replay
    theirs = server.expect("producer", 13)
    await api.heartbeat(
        server.addr, HeartbeatData("127.0.0.1@29125", producer_groups=["CAP_PRODUCER_GROUP"])
    )
    ours = server.requests[-1]
    assert_carries(ours, theirs)
    assert HeartbeatData.from_json(ours.body) == HeartbeatData.from_json(theirs.body)

    theirs = server.expect("producer", 15)
    await api.unregister_client(server.addr, "127.0.0.1@29125", producer_group="CAP_PRODUCER_GROUP")
    assert server.requests[-1].ext_fields == java_ext(theirs.header["extFields"])
