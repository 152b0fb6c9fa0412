"""RocketMQ 5's `trace_context` system property over the gRPC endpoint's message mapping: a
5.x producer's trace context is stored as TRACE_CONTEXT, and a stored TRACE_CONTEXT (which
Longboat's client writes with its OpenTelemetry spans) reaches a 5.x consumer as
`trace_context`."""

from __future__ import annotations

from longboat.broker.grpc.messages import to_inner, to_v2
from longboat.broker.grpc.schema import pb
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_sent_trace_context_is_stored_and_delivered_back() -> None:
    sent = pb.Message()
    sent.topic.name = "T"
    sent.body = b"x"
    sent.system_properties.message_id = "01" * 16
    sent.system_properties.trace_context = TRACEPARENT
    stored = to_inner(sent, 0, 1024)
    assert stored.properties[Prop.TRACE_CONTEXT] == TRACEPARENT

    delivered = to_v2(MessageExt("T", b"x", properties=dict(stored.properties)), namespace="")
    assert delivered.system_properties.trace_context == TRACEPARENT
    assert Prop.TRACE_CONTEXT not in delivered.user_properties


def test_no_trace_context_none_delivered() -> None:
    delivered = to_v2(MessageExt("T", b"x"), namespace="")
    assert not delivered.system_properties.HasField("trace_context")
