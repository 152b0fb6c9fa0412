"""One core, two protocols: each feature of the broker's core — the send checks, the read, pop
and ack progress, transactions, delays — is driven through remoting and through gRPC against
the same broker, and gives the same observable outcome.

Both sides speak the bare protocol (`tests/broker/wire.py` for remoting, the v2 stub for gRPC),
so no client-side behaviour stands between the test and the broker.  A feature added to the
core is then one change served by both, and a rule one protocol applied and the other did not
(a send to the broker's own topics, say) shows up here as a difference.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol, TypeVar

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from broker.wire import Wire, records, send_header, sent
from longboat.broker.core.append import PUT_OUTCOMES
from longboat.broker.core.refusal import Reason
from longboat.broker.grpc.status import V2_CODES
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.headers import EndTransactionRequestHeader
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.types import PERM_READ
from longboat.store import PutStatus

from .conftest import Grpc5

T = TypeVar("T")
_ids = itertools.count(1)
READ_TIMEOUT_S = 20.0
DELAY_MS = 600  # the third delay level of the module's broker ("200ms 400ms 600ms")


@dataclasses.dataclass(frozen=True)
class Answer:
    """A send's answer in its protocol's own terms: its code and the text that explains it;
    `ok` when the message was stored."""

    code: int
    text: str
    ok: bool


class Side(Protocol):
    """One protocol's way to use a core feature."""

    def send(self, topic: str, body: bytes) -> Answer: ...
    def send_delayed(self, topic: str, body: bytes, delay_ms: int) -> None: ...
    def begin(self, topic: str, body: bytes) -> object: ...
    def end(self, topic: str, half: object, commit: bool) -> None: ...
    def read(self, topic: str, group: str, until: bytes) -> list[bytes]: ...
    def advance(self, topic: str, group: str, to: int) -> None: ...
    def position(self, topic: str, group: str) -> int: ...


class RemotingSide:
    """Remoting, one connection per call, run on the broker's loop thread."""

    name = "remoting"

    def __init__(self, grpc5: Grpc5) -> None:
        self.cluster = grpc5.cluster
        self.next_offset: dict[tuple[str, str], int] = {}

    def _run(self, use: Callable[[Wire], Awaitable[T]]) -> T:
        async def once() -> T:
            wire = Wire(self.cluster.broker_addr)
            try:
                return await use(wire)
            finally:
                await wire.close()

        return self.cluster.runner.run(once())

    def send(self, topic: str, body: bytes) -> Answer:
        response = self._run(lambda w: w.send(topic, body, tags="T"))
        return Answer(response.code, response.remark or "", response.code == ResponseCode.SUCCESS)

    def send_delayed(self, topic: str, body: bytes, delay_ms: int) -> None:
        assert delay_ms == DELAY_MS
        sent(self._run(lambda w: w.send(topic, body, props={Prop.DELAY: "3"})))

    def begin(self, topic: str, body: bytes) -> object:
        props = {Prop.TRAN_MSG: "true", Prop.PGROUP: "tx-group", Prop.UNIQ_KEY: body.hex()}
        header = dataclasses.replace(
            send_header(topic, 0, props), sysFlag=MessageSysFlag.TRANSACTION_PREPARED_TYPE
        )
        result = sent(self._run(lambda w: w.call(RequestCode.SEND_MESSAGE_V2, header, body)))
        return result.queueOffset, decode_offset_msg_id(result.msgId)[2]

    def end(self, topic: str, half: object, commit: bool) -> None:
        assert isinstance(half, tuple)
        header = EndTransactionRequestHeader(
            producerGroup="tx-group",
            tranStateTableOffset=half[0],
            commitLogOffset=half[1],
            commitOrRollback=(
                MessageSysFlag.TRANSACTION_COMMIT_TYPE
                if commit
                else MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
            ),
            msgId="test",
        )
        answer = self._run(lambda w: w.call(RequestCode.END_TRANSACTION, header))
        assert answer.code == ResponseCode.SUCCESS, answer.remark

    def read(self, topic: str, group: str, until: bytes) -> list[bytes]:
        """Pull queue 0 on from where this group's last read ended, until `until` came."""
        got: list[bytes] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while until not in got:
            assert time.monotonic() < deadline, f"{until!r} never came; got {got}"
            pulled = self._pull(topic, group, self.next_offset.get((group, topic), 0))
            if pulled:
                self.next_offset[(group, topic)] = pulled[-1].queue_offset + 1
                got += [m.body for m in pulled]
            else:
                time.sleep(0.05)
        return got

    def _pull(self, topic: str, group: str, offset: int) -> list[MessageExt]:
        return records(self._run(lambda w: w.pull(topic, 0, offset, group=group)))

    def advance(self, topic: str, group: str, to: int) -> None:
        self._run(lambda w: w.commit(group, topic, 0, to))

    def position(self, topic: str, group: str) -> int:
        response = self._run(lambda w: w.query_offset(group, topic, 0))
        assert response.code == ResponseCode.SUCCESS, response.remark
        return int(response.ext_fields["offset"])


class GrpcSide:
    """`apache.rocketmq.v2.MessagingService` through its stub."""

    name = "grpc"

    def __init__(self, stub: MessagingServiceStub) -> None:
        self.stub = stub

    def _message(self, topic: str, body: bytes, kind: int) -> pb.Message:
        msg = pb.Message(topic=pb.Resource(name=topic), body=body)
        sp = msg.system_properties
        sp.message_id = f"0100000000000000000000{next(_ids):04X}"
        sp.message_type = kind
        sp.body_encoding = pb.Encoding.IDENTITY
        sp.tag = "T"
        return msg

    def _send(self, msg: pb.Message) -> svc.SendResultEntry:
        answer = self.stub.SendMessage(svc.SendMessageRequest(messages=[msg]), timeout=10)
        return answer.entries[0]

    def send(self, topic: str, body: bytes) -> Answer:
        entry = self._send(self._message(topic, body, pb.MessageType.NORMAL))
        return Answer(entry.status.code, entry.status.message, entry.status.code == pb.Code.OK)

    def send_delayed(self, topic: str, body: bytes, delay_ms: int) -> None:
        msg = self._message(topic, body, pb.MessageType.DELAY)
        msg.system_properties.delivery_timestamp.FromMilliseconds(
            int(time.time() * 1000) + delay_ms
        )
        entry = self._send(msg)
        assert entry.status.code == pb.Code.OK, entry.status.message

    def begin(self, topic: str, body: bytes) -> object:
        msg = self._message(topic, body, pb.MessageType.TRANSACTION)
        entry = self._send(msg)
        assert entry.status.code == pb.Code.OK, entry.status.message
        return entry.message_id, entry.transaction_id

    def end(self, topic: str, half: object, commit: bool) -> None:
        assert isinstance(half, tuple)
        answer = self.stub.EndTransaction(
            svc.EndTransactionRequest(
                topic=pb.Resource(name=topic),
                message_id=half[0],
                transaction_id=half[1],
                resolution=(
                    pb.TransactionResolution.COMMIT if commit else pb.TransactionResolution.ROLLBACK
                ),
                source=pb.TransactionSource.SOURCE_CLIENT,
            ),
            timeout=10,
        )
        assert answer.status.code == pb.Code.OK, answer.status.message

    def _receive(self, topic: str, group: str, batch: int) -> list[pb.Message]:
        request = svc.ReceiveMessageRequest(
            group=pb.Resource(name=group),
            message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
            filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
            batch_size=batch,
            invisible_duration=Duration(seconds=30),
            long_polling_timeout=Duration(seconds=1),
        )
        answers = list(self.stub.ReceiveMessage(request, timeout=10))
        return [a.message for a in answers if a.HasField("message")]

    def _ack(self, topic: str, group: str, messages: list[pb.Message]) -> None:
        entries = [
            svc.AckMessageEntry(
                message_id=m.system_properties.message_id,
                receipt_handle=m.system_properties.receipt_handle,
            )
            for m in messages
        ]
        answer = self.stub.AckMessage(
            svc.AckMessageRequest(
                group=pb.Resource(name=group), topic=pb.Resource(name=topic), entries=entries
            ),
            timeout=10,
        )
        assert answer.status.code == pb.Code.OK, answer.status.message

    def read(self, topic: str, group: str, until: bytes) -> list[bytes]:
        """Receive and ack, until `until` came."""
        got: list[bytes] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while until not in got:
            assert time.monotonic() < deadline, f"{until!r} never came; got {got}"
            messages = self._receive(topic, group, 16)
            if messages:
                self._ack(topic, group, messages)
            got += [m.body for m in messages]
        return got

    def advance(self, topic: str, group: str, to: int) -> None:
        """Receive and ack the group's first `to` messages."""
        done: list[pb.Message] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(done) < to:
            assert time.monotonic() < deadline, f"only {len(done)} of {to} received"
            messages = self._receive(topic, group, to - len(done))
            if messages:
                self._ack(topic, group, messages)
            done += messages
        assert sorted(m.system_properties.queue_offset for m in done) == list(range(to))

    def position(self, topic: str, group: str) -> int:
        """The queue offset of the next message the group is given (left unacked)."""
        deadline = time.monotonic() + READ_TIMEOUT_S
        while not (messages := self._receive(topic, group, 1)):
            assert time.monotonic() < deadline, "nothing to receive"
        return int(messages[0].system_properties.queue_offset)


@pytest.fixture
def stub(grpc5: Grpc5) -> Iterator[MessagingServiceStub]:
    channel = grpc.insecure_channel(grpc5.endpoint)
    try:
        yield MessagingServiceStub(channel)
    finally:
        channel.close()


@pytest.fixture
def sides(grpc5: Grpc5, stub: MessagingServiceStub) -> dict[str, Side]:
    return {"remoting": RemotingSide(grpc5), "grpc": GrpcSide(stub)}


BOTH = ["remoting", "grpc"]
ACROSS = [("remoting", "grpc"), ("grpc", "remoting")]


def other(name: str) -> str:
    return "grpc" if name == "remoting" else "remoting"


def read_only_topic(grpc5: Grpc5) -> str:
    name = f"one-core-read-only-{next(_ids)}"

    async def create() -> None:
        grpc5.cluster.broker.topics.create_topic(TopicConfig(name, 1, 1, perm=PERM_READ))

    grpc5.cluster.runner.run(create())
    return name


# (what the send is refused for, its remoting code, its v2 code, what the text says)
SEND_REFUSALS = {
    "topic not writable": (ResponseCode.NO_PERMISSION, pb.Code.FORBIDDEN, "is forbidden"),
    "the broker's own topic": (ResponseCode.INVALID_PARAMETER, pb.Code.FORBIDDEN, "is forbidden"),
    "illegal topic name": (ResponseCode.INVALID_PARAMETER, pb.Code.ILLEGAL_TOPIC, "sender's error"),
}


@pytest.mark.parametrize("side", BOTH)
@pytest.mark.parametrize("case", list(SEND_REFUSALS))
def test_the_send_checks_refuse_alike_in_both_protocols(
    grpc5: Grpc5, sides: dict[str, Side], side: str, case: str
) -> None:
    topic = {
        "topic not writable": read_only_topic(grpc5),
        "the broker's own topic": "SCHEDULE_TOPIC_XXXX",
        "illegal topic name": "no spaces allowed",
    }[case]
    remoting_code, v2_code, text = SEND_REFUSALS[case]
    answer = sides[side].send(topic, b"refused")
    assert answer.code == (remoting_code if side == "remoting" else v2_code)
    assert text in answer.text


@pytest.mark.parametrize(("writer", "reader"), ACROSS)
def test_a_send_is_read_through_the_other_protocol(
    grpc5: Grpc5, sides: dict[str, Side], writer: str, reader: str
) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    bodies = [f"{writer}-{i}".encode() for i in range(3)]
    for body in bodies:
        answer = sides[writer].send(topic, body)
        assert answer.ok, answer.text
    assert sides[reader].read(topic, group, until=bodies[-1]) == bodies


@pytest.mark.parametrize(("mover", "observer"), ACROSS)
def test_a_group_s_progress_moved_in_one_protocol_is_where_the_other_resumes(
    grpc5: Grpc5, sides: dict[str, Side], mover: str, observer: str
) -> None:
    """Pop and ack (gRPC) and offset commits (remoting) move one consumer-offset table: two
    messages consumed through one protocol are behind the group in the other."""
    topic, group = grpc5.topic(queues=1), grpc5.group()
    for i in range(4):
        assert sides["remoting"].send(topic, b"m%d" % i).ok
    sides[mover].advance(topic, group, 2)
    assert sides[observer].position(topic, group) == 2


@pytest.mark.parametrize("side", BOTH)
def test_a_transaction_begun_and_ended_in_one_protocol_is_read_in_the_other(
    grpc5: Grpc5, sides: dict[str, Side], side: str
) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    producer, reader = sides[side], sides[other(side)]
    committed = producer.begin(topic, b"tx-commit")
    rolled_back = producer.begin(topic, b"tx-rollback")
    assert producer.send(topic, b"after-halves").ok
    assert reader.read(topic, group, until=b"after-halves") == [b"after-halves"]
    producer.end(topic, committed, commit=True)
    producer.end(topic, rolled_back, commit=False)
    assert reader.read(topic, group, until=b"tx-commit") == [b"tx-commit"]
    assert producer.send(topic, b"last").ok
    assert reader.read(topic, group, until=b"last") == [b"last"]


@pytest.mark.parametrize("side", BOTH)
def test_a_delayed_send_in_one_protocol_is_read_in_the_other_once_due(
    grpc5: Grpc5, sides: dict[str, Side], side: str
) -> None:
    """Remoting delays by level, gRPC by delivery time; either way the message reaches its
    topic, readable through the other protocol, no earlier than it is due."""
    topic, group = grpc5.topic(queues=1), grpc5.group()
    started = time.monotonic()
    sides[side].send_delayed(topic, b"delayed", DELAY_MS)
    assert sides[other(side)].read(topic, group, until=b"delayed") == [b"delayed"]
    assert time.monotonic() - started >= DELAY_MS / 1000 - 0.05  # 50 ms of clock slack


def test_every_reason_the_core_refuses_for_has_its_v2_code() -> None:
    """The gRPC adapter answers a core refusal through one table: a reason added to the core
    without its v2 code would fail there at run time, so the table must cover them all."""
    assert set(V2_CODES) == set(Reason)
    assert {PUT_OUTCOMES[status] for status in PutStatus} - {None} <= set(Reason)
