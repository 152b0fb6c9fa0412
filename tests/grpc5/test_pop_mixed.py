"""One pop state for both protocols: a group whose members pop over remoting (POP_MESSAGE)
and over gRPC (ReceiveMessage) shares the in-flight messages, their attempts and their
acks — what one member holds the other does not get, what one lets expire the other gets
again with the attempt counted."""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from broker.wire import Wire, records
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.message import MessageExt
from longboat.protocol.pop_headers import AckMessageRequestHeader, PopMessageRequestHeader
from longboat.protocol.properties import Prop

from .conftest import Grpc5
from .test_one_core import stub  # noqa: F401 - the v2 stub fixture


def remoting(grpc5: Grpc5, code: int, header: object, body: bytes = b"") -> RemotingCommand:
    async def once() -> RemotingCommand:
        wire = Wire(grpc5.cluster.broker_addr)
        try:
            return await wire.call(code, header, body)  # type: ignore[arg-type]
        finally:
            await wire.close()

    return grpc5.cluster.runner.run(once())


def remoting_pop(grpc5: Grpc5, topic: str, group: str, poll_ms: int) -> list[MessageExt]:
    header = PopMessageRequestHeader(group, topic, -1, 16, 60_000, poll_ms, 0, 0, "TAG", "*")
    response = remoting(grpc5, RequestCode.POP_MESSAGE, header)
    return records(response) if response.code == ResponseCode.SUCCESS else []


def grpc_receive(
    v2: MessagingServiceStub, topic: str, group: str, invisible_s: int
) -> list[pb.Message]:
    request = svc.ReceiveMessageRequest(
        group=pb.Resource(name=group),
        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        batch_size=16,
        invisible_duration=Duration(seconds=invisible_s),
        long_polling_timeout=Duration(seconds=1),
    )
    return [a.message for a in v2.ReceiveMessage(request, timeout=10) if a.HasField("message")]


def test_a_group_mixing_remoting_and_grpc_pops_shares_one_state(
    grpc5: Grpc5,
    stub: MessagingServiceStub,  # noqa: F811
) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()

    async def send() -> None:
        wire = Wire(grpc5.cluster.broker_addr)
        try:
            await wire.send(topic, b"one", queue_id=0)
        finally:
            await wire.close()

    grpc5.cluster.runner.run(send())
    [held] = grpc_receive(stub, topic, group, invisible_s=1)
    assert held.body == b"one"
    # Held by the gRPC member: a remoting pop that answers at once finds nothing ...
    assert remoting_pop(grpc5, topic, group, poll_ms=0) == []
    # ... and a long-polled one gets it when the gRPC member's invisible time ran out.
    [again] = remoting_pop(grpc5, topic, group, poll_ms=15_000)
    assert again.body == b"one" and again.reconsume_times == 1
    header = AckMessageRequestHeader(
        group, topic, again.queue_id, again.properties[Prop.POP_CK], again.queue_offset
    )
    assert remoting(grpc5, RequestCode.ACK_MESSAGE, header).code == ResponseCode.SUCCESS
    # Acked over remoting: the gRPC member's old handle is stale, nothing comes back.
    answer = stub.AckMessage(
        svc.AckMessageRequest(
            group=pb.Resource(name=group),
            topic=pb.Resource(name=topic),
            entries=[
                svc.AckMessageEntry(
                    message_id=held.system_properties.message_id,
                    receipt_handle=held.system_properties.receipt_handle,
                )
            ],
        ),
        timeout=10,
    )
    assert answer.status.code != pb.Code.OK
    assert grpc_receive(stub, topic, group, invisible_s=30) == []
    assert grpc5.cluster.broker.offsets.query(group, topic, 0) == 1
