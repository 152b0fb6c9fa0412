"""Bad input over the gRPC endpoint gets the status RocketMQ's proxy answers, with a message
that says what is wrong, and the endpoint goes on serving.  Requests go through the client
package's own stub (the official client checks some of these before sending)."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from .conftest import Grpc5

Code = pb.Code


@pytest.fixture
def stub(grpc5: Grpc5) -> Iterator[MessagingServiceStub]:
    channel = grpc.insecure_channel(grpc5.endpoint, options=[("grpc.max_send_message_length", -1)])
    try:
        yield MessagingServiceStub(channel)
    finally:
        channel.close()


def resource(name: str) -> pb.Resource:
    return pb.Resource(name=name)


def send_request(topic: str, body: bytes) -> svc.SendMessageRequest:
    msg = pb.Message(topic=resource(topic), body=body)
    msg.system_properties.message_id = "01ABCDEF"
    msg.system_properties.message_type = pb.MessageType.NORMAL
    msg.system_properties.body_encoding = pb.Encoding.IDENTITY
    return svc.SendMessageRequest(messages=[msg])


def receive(stub: MessagingServiceStub, request: svc.ReceiveMessageRequest) -> list:
    return list(stub.ReceiveMessage(request, timeout=10))


def receive_request(topic: str, group: str, **fields) -> svc.ReceiveMessageRequest:
    return svc.ReceiveMessageRequest(
        group=resource(group),
        message_queue=pb.MessageQueue(topic=resource(topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        batch_size=16,
        long_polling_timeout=Duration(seconds=0),
        **fields,
    )


def test_unknown_topic_is_topic_not_found_and_serving_goes_on(grpc5: Grpc5, stub) -> None:
    route = stub.QueryRoute(svc.QueryRouteRequest(topic=resource("no-such-topic")), timeout=5)
    assert route.status.code == Code.TOPIC_NOT_FOUND
    assert "no-such-topic" in route.status.message
    sent = stub.SendMessage(send_request("no-such-topic", b"x"), timeout=5)
    assert sent.status.code == Code.TOPIC_NOT_FOUND
    topic = grpc5.topic(queues=2)
    route = stub.QueryRoute(svc.QueryRouteRequest(topic=resource(topic)), timeout=5)
    assert route.status.code == Code.OK
    assert [q.id for q in route.message_queues] == [0, 1]
    assert route.message_queues[0].broker.endpoints.addresses[0].port > 0


def test_illegal_topic_name(stub) -> None:
    route = stub.QueryRoute(svc.QueryRouteRequest(topic=resource("bad topic!")), timeout=5)
    assert route.status.code == Code.ILLEGAL_TOPIC


def test_body_over_the_limit_is_refused_and_nothing_stored(grpc5: Grpc5, stub) -> None:
    topic = grpc5.topic(queues=1)
    limit = grpc5.cluster.broker.config.max_message_size
    sent = stub.SendMessage(send_request(topic, b"x" * (limit + 1)), timeout=20)
    assert sent.status.code == Code.MESSAGE_BODY_TOO_LARGE
    assert str(limit) in sent.status.message
    assert grpc5.cluster.broker.store.max_offset(topic, 0) == 0
    assert stub.SendMessage(send_request(topic, b"ok"), timeout=5).status.code == Code.OK
    empty = stub.SendMessage(send_request(topic, b""), timeout=5)
    assert empty.status.code == Code.MESSAGE_BODY_EMPTY


def test_reserved_names_and_broken_properties_are_refused_and_nothing_stored(
    grpc5: Grpc5, stub
) -> None:
    topic = grpc5.topic(queues=1)
    for reserved in ("SCHEDULE_TOPIC_XXXX", "TBW102", "%DLQ%g", "%RETRY%no-such-group"):
        sent = stub.SendMessage(send_request(reserved, b"x"), timeout=5)
        assert sent.status.code != Code.OK, reserved
    assert grpc5.cluster.broker.topics.get("%RETRY%no-such-group") is None
    for properties, code in [
        ({"UNIQ_KEY": "mine"}, Code.ILLEGAL_MESSAGE_PROPERTY_KEY),
        ({"na\x02me": "v"}, Code.ILLEGAL_MESSAGE_PROPERTY_KEY),
        ({"name": "va\x01lue"}, Code.BAD_REQUEST),
    ]:
        request = send_request(topic, b"x")
        request.messages[0].user_properties.update(properties)
        sent = stub.SendMessage(request, timeout=5)
        assert sent.status.code == code, properties
        assert "reserves" in sent.status.message or "separator" in sent.status.message
    assert grpc5.cluster.broker.store.max_offset(topic, 0) == 0


def test_stale_or_forged_receipt_handle(grpc5: Grpc5, stub) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    assert stub.SendMessage(send_request(topic, b"once"), timeout=5).status.code == Code.OK
    answer = receive(stub, receive_request(topic, group, invisible_duration=Duration(seconds=30)))
    assert answer[0].status.code == Code.OK
    handle = answer[1].message.system_properties.receipt_handle

    def ack(h: str) -> svc.AckMessageResponse:
        entry = svc.AckMessageEntry(message_id="01ABCDEF", receipt_handle=h)
        return stub.AckMessage(
            svc.AckMessageRequest(group=resource(group), topic=resource(topic), entries=[entry]),
            timeout=5,
        )

    assert ack(handle).status.code == Code.OK
    again = ack(handle)
    assert again.status.code == Code.INVALID_RECEIPT_HANDLE
    assert again.entries[0].status.code == Code.INVALID_RECEIPT_HANDLE
    assert ack("not-a-handle").status.code == Code.INVALID_RECEIPT_HANDLE
    change = stub.ChangeInvisibleDuration(
        svc.ChangeInvisibleDurationRequest(
            group=resource(group),
            topic=resource(topic),
            receipt_handle=handle,
            invisible_duration=Duration(seconds=5),
        ),
        timeout=5,
    )
    assert change.status.code == Code.INVALID_RECEIPT_HANDLE
    assert change.receipt_handle == handle  # the client keeps the handle it had


def test_invisible_time_out_of_range(grpc5: Grpc5, stub) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    assert stub.SendMessage(send_request(topic, b"kept"), timeout=5).status.code == Code.OK
    for invisible in (Duration(nanos=10_000_000), Duration(seconds=13 * 3600)):
        answer = receive(stub, receive_request(topic, group, invisible_duration=invisible))
        assert [a.WhichOneof("content") for a in answer] == ["status"]
        assert answer[0].status.code == Code.ILLEGAL_INVISIBLE_TIME
    # Nothing was popped by the refused receives.
    answer = receive(stub, receive_request(topic, group, invisible_duration=Duration(seconds=30)))
    assert answer[0].status.code == Code.OK
    assert answer[1].message.body == b"kept"
    change = stub.ChangeInvisibleDuration(
        svc.ChangeInvisibleDurationRequest(
            group=resource(group),
            topic=resource(topic),
            receipt_handle=answer[1].message.system_properties.receipt_handle,
            invisible_duration=Duration(seconds=13 * 3600),
        ),
        timeout=5,
    )
    assert change.status.code == Code.ILLEGAL_INVISIBLE_TIME


def test_empty_receive_is_message_not_found_and_ends(grpc5: Grpc5, stub) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    answer = receive(stub, receive_request(topic, group, invisible_duration=Duration(seconds=30)))
    assert [a.WhichOneof("content") for a in answer] == ["status", "delivery_timestamp"]
    assert answer[0].status.code == Code.MESSAGE_NOT_FOUND


def test_sql_filter_is_refused_without_property_filters_or_when_malformed(
    grpc5: Grpc5, stub, grpc5_factory
) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    request = receive_request(topic, group)
    request.filter_expression.type = pb.FilterType.SQL
    request.filter_expression.expression = "a > 1"
    answer = receive(stub, request)
    assert answer[0].status.code == Code.ILLEGAL_FILTER_EXPRESSION
    assert "enablePropertyFilter" in answer[0].status.message
    # With property filters on, a malformed expression is refused, saying why.
    env = grpc5_factory(enable_property_filter=True)
    channel = grpc.insecure_channel(env.endpoint)
    try:
        request = receive_request(env.topic(queues=1), env.group())
        request.filter_expression.type = pb.FilterType.SQL
        request.filter_expression.expression = "a >"
        answer = receive(MessagingServiceStub(channel), request)
        assert answer[0].status.code == Code.ILLEGAL_FILTER_EXPRESSION
    finally:
        channel.close()


def test_unknown_group_when_groups_are_not_auto_created(grpc5_factory) -> None:
    env = grpc5_factory(auto_create_subscription_group=False)
    topic = env.topic(queues=1)
    channel = grpc.insecure_channel(env.endpoint)
    try:
        stub = MessagingServiceStub(channel)
        answer = receive(stub, receive_request(topic, "nobody-made-me"))
        assert answer[0].status.code == Code.CONSUMER_GROUP_NOT_FOUND
        assert "nobody-made-me" in answer[0].status.message
        known = env.group()
        answer = receive(stub, receive_request(topic, known))
        assert answer[0].status.code == Code.MESSAGE_NOT_FOUND
    finally:
        channel.close()
