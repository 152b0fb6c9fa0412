"""ACL over the gRPC endpoint: with aclEnable, the official Python client's `Credentials(ak,
sk)` are checked against plain_acl.yml, the same accounts and rules as remoting; a refusal is
UNAUTHORIZED (unknown account, wrong signature) or FORBIDDEN (no permission), and the endpoint
goes on serving the others."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from rocketmq import ClientConfiguration, Credentials, Message, Producer
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from broker.test_acl_wire import ACL
from longboat.broker.grpc.auth import signature
from longboat.protocol.bodies import TopicConfig

from .conftest import Grpc5, start_grpc5


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grpc5]:
    data = tmp_path_factory.mktemp("grpc5-acl")
    acl_file = data / "plain_acl.yml"
    acl_file.write_text(ACL)
    cluster = start_grpc5(data / "store", acl_enable=True, plain_acl_file=acl_file)
    grpc5 = Grpc5(cluster)

    async def create() -> None:
        for name in ("Orders", "Audit"):
            cluster.broker.topics.create_topic(TopicConfig(name, 2, 2))

    try:
        cluster.runner.run(create())
        yield grpc5
    finally:
        cluster.stop()


def config(grpc5: Grpc5, access_key: str, secret_key: str) -> ClientConfiguration:
    return ClientConfiguration(
        grpc5.endpoint, Credentials(access_key, secret_key), request_timeout=3
    )


def message(topic: str, body: bytes) -> Message:
    msg = Message()
    msg.topic = topic
    msg.body = body
    return msg


def test_a_signed_producer_with_pub_sends(secured: Grpc5) -> None:
    producer = Producer(config(secured, "producer1", "producer-secret"), ("Orders",))
    producer.startup()
    try:
        receipt = producer.send(message("Orders", b"allowed"))
        assert receipt.message_id
    finally:
        producer.shutdown()


def test_a_wrong_secret_is_unauthorized_and_others_still_served(secured: Grpc5) -> None:
    producer = Producer(config(secured, "producer1", "not-the-secret"))
    producer.startup()
    try:
        # The client turns the refused route into its own error.
        with pytest.raises(Exception, match="failed to fetch topic:Orders route"):
            producer.send(message("Orders", b"refused"))
    finally:
        producer.shutdown()
    # What it was refused with: the same call, signed with the same wrong secret.
    route = svc.QueryRouteRequest(topic=pb.Resource(name="Orders"))
    refused = call(secured, "producer1", "not-the-secret", "QueryRoute", route)
    assert refused.code == pb.Code.UNAUTHORIZED
    assert "the signature of AccessKey 'producer1' does not match" in refused.message
    test_a_signed_producer_with_pub_sends(secured)


def test_a_topic_without_pub_is_forbidden(secured: Grpc5) -> None:
    producer = Producer(config(secured, "consumer1", "consumer-secret"))  # Orders=SUB only
    producer.startup()
    try:
        with pytest.raises(Exception, match="no PUB permission on topic 'Orders'"):
            producer.send(message("Orders", b"refused"))
    finally:
        producer.shutdown()
    test_a_signed_producer_with_pub_sends(secured)


def call(
    secured: Grpc5, access_key: str, secret_key: str, method: str, request: object
) -> pb.Status:
    """One raw call with RocketMQ 5's metadata, signed with `secret_key`."""
    date_time = "20261122T111508Z"
    metadata = (
        ("x-mq-date-time", date_time),
        (
            "authorization",
            f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, "
            f"Signature={signature(date_time, secret_key)}",
        ),
    )
    with grpc.insecure_channel(secured.endpoint) as channel:
        rpc = getattr(MessagingServiceStub(channel), method)
        answer = rpc(request, metadata=metadata, timeout=5)
        if method == "ReceiveMessage":
            answer = next(iter(answer))
        return answer.status


def test_each_rpc_needs_rocketmqs_permissions(secured: Grpc5) -> None:
    orders, audit = pb.Resource(name="Orders"), pb.Resource(name="Audit")
    readers, others = pb.Resource(name="readers"), pb.Resource(name="others")
    route = svc.QueryRouteRequest(topic=orders)
    assert call(secured, "producer1", "producer-secret", "QueryRoute", route).code == pb.Code.OK
    assert call(secured, "consumer1", "consumer-secret", "QueryRoute", route).code == pb.Code.OK
    route = svc.QueryRouteRequest(topic=audit)
    assert call(secured, "consumer1", "consumer-secret", "QueryRoute", route).code == (
        pb.Code.FORBIDDEN
    )
    assert call(secured, "nobody", "x", "QueryRoute", route).code == pb.Code.UNAUTHORIZED
    queue = pb.MessageQueue(topic=orders, id=-1)
    receive = svc.ReceiveMessageRequest(
        group=readers, message_queue=queue, batch_size=1, auto_renew=True
    )
    receive.filter_expression.expression = "*"
    receive.long_polling_timeout.FromMilliseconds(100)
    code = call(secured, "consumer1", "consumer-secret", "ReceiveMessage", receive).code
    assert code in (pb.Code.OK, pb.Code.MESSAGE_NOT_FOUND)  # let through
    receive.group.CopyFrom(others)
    code = call(secured, "consumer1", "consumer-secret", "ReceiveMessage", receive).code
    assert code == pb.Code.FORBIDDEN
    code = call(secured, "producer1", "producer-secret", "ReceiveMessage", receive).code
    assert code == pb.Code.FORBIDDEN


def test_a_refused_telemetry_settings_command_is_answered_and_the_stream_ends(
    secured: Grpc5,
) -> None:
    date_time = "20261122T111508Z"
    metadata = (
        ("x-mq-date-time", date_time),
        (
            "authorization",
            "MQv2-HMAC-SHA1 Credential=consumer1, SignedHeaders=x-mq-date-time, "
            f"Signature={signature(date_time, 'consumer-secret')}",
        ),
    )
    settings = pb.Settings(
        client_type=pb.ClientType.PRODUCER,
        publishing=pb.Publishing(topics=[pb.Resource(name="Orders")]),
    )
    with grpc.insecure_channel(secured.endpoint) as channel:
        stream = MessagingServiceStub(channel).Telemetry(
            iter([svc.TelemetryCommand(settings=settings)]), metadata=metadata, timeout=5
        )
        answers = list(stream)
    assert [a.status.code for a in answers] == [pb.Code.FORBIDDEN]
    assert "no PUB permission on topic 'Orders'" in answers[0].status.message
