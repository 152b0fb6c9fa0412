"""A gRPC ReceiveMessage that found nothing parks in the broker's one hold service, beside held
pulls and remoting pops: the hold service counts it (`held_pops`, and POLLING_INFO over
remoting), and a graceful stop answers it at once, with no message, as it answers a parked
remoting pop and a held pull."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from longboat.protocol import RequestCode
from longboat.protocol.pop_headers import PollingInfoRequestHeader

from .conftest import Grpc5
from .test_pop_mixed import remoting

SAFETY_S = 20.0


def parked_receive(stub: MessagingServiceStub, topic: str, group: str) -> list[Any]:
    """ReceiveMessage long-polled for 60 s: every answer of its stream."""
    request = svc.ReceiveMessageRequest(
        group=pb.Resource(name=group),
        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        batch_size=16,
        invisible_duration=Duration(seconds=30),
        long_polling_timeout=Duration(seconds=60),
    )
    return list(stub.ReceiveMessage(request, timeout=90))


def test_a_parked_receive_counts_in_the_hold_service_and_a_graceful_stop_answers_it(
    grpc5_factory: Any,
) -> None:
    g5: Grpc5 = grpc5_factory()
    topic, group = g5.topic(queues=1), g5.group()
    broker = g5.cluster.broker
    with grpc.insecure_channel(g5.endpoint) as channel, ThreadPoolExecutor(1) as pool:
        answer = pool.submit(parked_receive, MessagingServiceStub(channel), topic, group)
        deadline = time.monotonic() + SAFETY_S
        while broker.hold.held_pops != 1:
            assert time.monotonic() < deadline, "the receive never parked"
            assert not answer.done(), answer.result()
            time.sleep(0.05)
        assert broker.hold.held_count == 1
        polling = remoting(g5, RequestCode.POLLING_INFO, PollingInfoRequestHeader(group, topic, -1))
        assert polling.ext_fields["pollingNum"] == "1"
        g5.cluster.runner.run(broker.stop())
        # Answered by the stop: its 60 s poll is far from over when this safety net ends.
        responses = answer.result(timeout=SAFETY_S)
    assert not any(r.HasField("message") for r in responses)
    statuses = [r.status.code for r in responses if r.HasField("status")]
    assert statuses == [pb.Code.MESSAGE_NOT_FOUND]
    assert broker.hold.held_count == 0
