"""OpenTelemetry spans for sends and deliveries, with W3C trace context in the message.

Spans follow the messaging semantic conventions: `send <topic>` (PRODUCER) around a send;
`receive <topic>` (CONSUMER) when pulled messages reach the consume service; `process
<topic>` (CONSUMER) around the listener call, current while the listener runs (its own spans
are its children), and linked to the send span of every message it processes.  The send
span's context travels in the message's properties (`traceparent`, `tracestate`, written by
the global propagator: W3C trace context unless the application set another), and the
traceparent also as `TRACE_CONTEXT`, RocketMQ 5's trace context, which the broker's gRPC
endpoint hands to 5.x consumers as the `trace_context` system property (and stores from 5.x
producers, where a consumer here reads it when `traceparent` is absent).

`opentelemetry-api` is optional (the `otel` extra): it is imported once, here, when a client
first asks for spans; a client that does not ask never imports it, and asking without it
installed is a usage error.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from longboat.client.errors import ClientUsageError
from longboat.client.message import Message, SendResult
from longboat.client.tracing.hooks import ConsumeEnd, SendEnd
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop

if TYPE_CHECKING:
    from opentelemetry.trace import Link, Span

SYSTEM = "rocketmq"
TRACEPARENT = "traceparent"
INSTRUMENTATION = "longboat.client"


@functools.cache
def _opentelemetry() -> tuple[ModuleType, ModuleType] | None:
    """opentelemetry's trace and propagate modules, imported at the first ask (a client that
    never asks for spans never imports them); None when the extra is not installed."""
    try:
        from opentelemetry import propagate, trace
    except ImportError:
        return None
    return trace, propagate


def open_telemetry_observer() -> OpenTelemetryObserver:
    """The span observer; ClientUsageError when opentelemetry-api is not installed."""
    modules = _opentelemetry()
    if modules is None:
        raise ClientUsageError(
            "open_telemetry=True needs the opentelemetry-api package: pip install 'longboat[otel]'"
        )
    return OpenTelemetryObserver(*modules)


def _consumer_attributes(group: str, msgs: Sequence[MessageExt]) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.consumer.group.name": group,
        "messaging.rocketmq.client_group": group,
        "messaging.batch.message_count": len(msgs),
    }
    if len(msgs) == 1:
        attributes["messaging.message.id"] = msgs[0].msg_id
        attributes["messaging.rocketmq.message.delivery_attempt"] = msgs[0].reconsume_times + 1
    return attributes


class OpenTelemetryObserver:
    """Makes the spans; the tracer is the global provider's, looked up once."""

    def __init__(self, trace: ModuleType, propagate: ModuleType) -> None:
        self._trace = trace
        self._propagate = propagate
        self._tracer = trace.get_tracer(INSTRUMENTATION)

    def _links(self, msgs: Sequence[MessageExt]) -> list[Link]:
        """Links to the send spans whose context the messages carry."""
        links = []
        for m in msgs:
            carrier = m.properties
            if TRACEPARENT not in carrier and Prop.TRACE_CONTEXT in carrier:
                carrier = {TRACEPARENT: carrier[Prop.TRACE_CONTEXT]}  # a RocketMQ 5 client's
            context = self._propagate.extract(carrier)
            span_context = self._trace.get_current_span(context).get_span_context()
            if span_context.is_valid:
                links.append(self._trace.Link(span_context))
        return links

    def begin_send(self, group: str, msg: Message) -> SendEnd:
        span = self._tracer.start_span(
            f"send {msg.topic}",
            kind=self._trace.SpanKind.PRODUCER,
            attributes={
                "messaging.system": SYSTEM,
                "messaging.operation.type": "send",
                "messaging.operation.name": "send",
                "messaging.destination.name": msg.topic,
                "messaging.rocketmq.client_group": group,
                "messaging.message.body.size": len(msg.body),
                **({"messaging.rocketmq.message.tag": msg.tags} if msg.tags else {}),
                **({"messaging.rocketmq.message.keys": msg.key_list} if msg.keys else {}),
            },
        )
        self._propagate.inject(msg.properties, context=self._trace.set_span_in_context(span))
        if TRACEPARENT in msg.properties:
            # Where RocketMQ 5 keeps it: a gRPC consumer gets it as `trace_context`.
            msg.properties[Prop.TRACE_CONTEXT] = msg.properties[TRACEPARENT]

        def end(msg_id: str, result: SendResult | None, error: BaseException | None) -> None:
            span.set_attribute("messaging.message.id", msg_id)
            if error is not None:
                span.record_exception(error)
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(error)))
            span.end()

        return end

    def _consumer_span(self, operation: str, group: str, msgs: Sequence[MessageExt]) -> Span:
        topic = msgs[0].topic if msgs else ""
        return self._tracer.start_span(
            f"{operation} {topic}",
            kind=self._trace.SpanKind.CONSUMER,
            links=self._links(msgs),
            attributes={
                **_consumer_attributes(group, msgs),
                "messaging.operation.type": operation,
                "messaging.operation.name": operation,
                "messaging.destination.name": topic,
            },
        )

    def received(self, group: str, msgs: Sequence[MessageExt]) -> None:
        if msgs:
            self._consumer_span("receive", group, msgs).end()

    def begin_consume(self, group: str, msgs: Sequence[MessageExt]) -> ConsumeEnd:
        span = self._consumer_span("process", group, msgs)
        scope = self._trace.use_span(span, end_on_exit=False)
        scope.__enter__()

        def end(success: bool) -> None:
            if not success:
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, "not consumed"))
            scope.__exit__(None, None, None)
            span.end()

        return end
