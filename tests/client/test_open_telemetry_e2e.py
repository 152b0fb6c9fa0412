"""OpenTelemetry spans across a real broker (the SDK's in-memory exporter): a send span
whose W3C trace context travels in the message, a receive and a process span on the
consumer, both linked to the send, the process span current inside the listener."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from longboat.client import Message
from longboat.client.producer import Producer
from longboat.client.push import ConcurrentContext, ConsumeFrom, PushConsumer
from longboat.protocol.message import MessageExt

from .client_e2e import config_for, unique
from .push_support import create_topic

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """The process's tracer provider (set once: OpenTelemetry allows one) and its spans."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    return _EXPORTER


async def test_send_receive_and_process_spans_are_linked(
    namesrv: str, spans: InMemorySpanExporter
) -> None:
    topic, group = await create_topic(namesrv, 2), unique("og")
    tracer = trace.get_tracer("test")
    producer = Producer(unique("opg"), config=config_for(namesrv), open_telemetry=True)
    await producer.start()
    try:
        with tracer.start_as_current_span("checkout"):
            result = await producer.send(Message(topic, b"order-1"))
    finally:
        await producer.shutdown()

    got: list[MessageExt] = []
    done = asyncio.Event()

    def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        with tracer.start_as_current_span("handle"):
            got.extend(msgs)
        done.set()

    consumer = PushConsumer(
        group, config=config_for(namesrv), consume_from=ConsumeFrom.FIRST_OFFSET,
        open_telemetry=True,
    )  # fmt: skip
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    await consumer.start()
    try:
        await asyncio.wait_for(done.wait(), 30)
    finally:
        await consumer.shutdown()

    by_name = {s.name: s for s in spans.get_finished_spans()}
    checkout, send = by_name["checkout"], by_name[f"send {topic}"]
    receive, process = by_name[f"receive {topic}"], by_name[f"process {topic}"]
    handle = by_name["handle"]
    assert send.kind is trace.SpanKind.PRODUCER
    assert send.parent is not None and send.parent.span_id == checkout.context.span_id
    assert send.attributes is not None
    assert send.attributes["messaging.system"] == "rocketmq"
    assert send.attributes["messaging.destination.name"] == topic
    assert send.attributes["messaging.message.id"] == result.msg_id
    # The context travelled in the message, W3C's traceparent.
    traceparent = got[0].properties["traceparent"]
    assert traceparent.split("-")[1:3] == [
        f"{send.context.trace_id:032x}",
        f"{send.context.span_id:016x}",
    ]
    # And where RocketMQ 5 keeps it (the gRPC endpoint's `trace_context`).
    assert got[0].properties["TRACE_CONTEXT"] == traceparent
    for span in (receive, process):
        assert span.kind is trace.SpanKind.CONSUMER
        assert [link.context.span_id for link in span.links] == [send.context.span_id]
        assert span.attributes is not None
        assert span.attributes["messaging.consumer.group.name"] == group
        assert span.attributes["messaging.message.id"] == result.msg_id
    # The listener's own span is the process span's child.
    assert handle.parent is not None and handle.parent.span_id == process.context.span_id


def test_spans_cost_nothing_unasked_and_need_the_extra() -> None:
    """The client never imports opentelemetry unless asked; asked without it installed (an
    import that fails), the producer refuses with the fix."""
    code = """
import sys
import longboat.client.producer, longboat.client.push
assert "opentelemetry" not in sys.modules, "imported without being asked"
sys.modules["opentelemetry"] = None  # as if the extra were not installed
from longboat.client.errors import ClientUsageError
from longboat.client.producer import Producer
try:
    Producer("g", namesrv_addrs="127.0.0.1:9876", open_telemetry=True)
except ClientUsageError as exc:
    print(exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "pip install 'longboat[otel]'" in out.stdout, out.stderr
