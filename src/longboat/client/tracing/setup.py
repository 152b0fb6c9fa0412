"""Which observers a producer or a push consumer runs, from its tracing options, and the
lifetime of the trace writer they share."""

from __future__ import annotations

from longboat.client.config import ClientConfig
from longboat.client.tracing.dispatcher import SendTrace, TraceDispatcher
from longboat.client.tracing.hooks import Observer
from longboat.client.tracing.mq_trace import MessageTracer
from longboat.client.tracing.otel import open_telemetry_observer


class Tracing:
    """The observers of one producer or consumer; `start` and `close` run its trace writer
    (records still queued at `close` are written then)."""

    def __init__(
        self,
        send: SendTrace,
        config: ClientConfig,
        *,
        enable_trace: bool,
        trace_topic: str,
        open_telemetry: bool,
    ) -> None:
        self.dispatcher = TraceDispatcher(send, trace_topic) if enable_trace else None
        observers: list[Observer] = []
        if open_telemetry:
            observers.append(open_telemetry_observer())
        # The record writer, also for what only it records (a transaction's outcome).
        self.message_tracer = (
            MessageTracer(self.dispatcher, config.client_ip) if self.dispatcher else None
        )
        if self.message_tracer is not None:
            observers.append(self.message_tracer)
        # Spans first, so the records' costs include no span work.
        self.observers = observers

    def start(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.start()

    async def close(self) -> None:
        if self.dispatcher is not None:
            await self.dispatcher.close()
