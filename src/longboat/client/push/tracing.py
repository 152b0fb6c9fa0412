"""A push consumer's tracing: its observers, and the producer its trace records go out by.

The records are sent as Java's consumer sends them: by a producer of their own, in the group
`_INNER_TRACE_PRODUCER-<consumer group>`, started only when traces are asked for.
"""

from __future__ import annotations

from longboat.client.config import ClientConfig
from longboat.client.consumer_settings import PushConsumerSettings
from longboat.client.producer import Producer
from longboat.client.tracing.hooks import Observer
from longboat.client.tracing.setup import Tracing
from longboat.protocol.trace import TRACE_PRODUCER_GROUP


class ConsumerTracing:
    def __init__(self, tracing: Tracing, producer: Producer | None) -> None:
        self._tracing = tracing
        self._producer = producer

    @property
    def observers(self) -> list[Observer]:
        return self._tracing.observers

    @classmethod
    async def start(
        cls, group: str, settings: PushConsumerSettings, config: ClientConfig
    ) -> ConsumerTracing:
        producer = None
        if settings.enable_trace:
            producer = Producer(f"{TRACE_PRODUCER_GROUP}-{group}", config=config)
            await producer.start()
        tracing = Tracing(
            producer.send_own if producer else _no_send,
            config,
            enable_trace=settings.enable_trace,
            trace_topic=settings.trace_topic,
            open_telemetry=settings.open_telemetry,
        )
        tracing.start()
        return cls(tracing, producer)

    async def close(self) -> None:
        """Write the records still queued, then stop the trace producer."""
        await self._tracing.close()
        if self._producer is not None:
            await self._producer.shutdown()


async def _no_send(message: object) -> None:
    raise AssertionError("no trace writer without enable_trace")
