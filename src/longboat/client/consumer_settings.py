"""Consumer settings: frozen values, validated once when built, shared where the meaning is.

`ConsumerSettings` holds what both consumers mean alike (where a new group starts, how the
group's queues are shared, how pulls are sized and held); `PushConsumerSettings` and
`LitePullSettings` add what only one of them has, and differ from each other only in the
defaults RocketMQ's Java clients use (a lite pull batch is 10 messages held up to 20 s, a push
consumer's 32 held up to 15 s).  A bad value raises `ClientUsageError` where the settings are
built, before anything is sent.

The consumers take either a settings object or its fields as keyword arguments
(`*Options`, checked against the dataclass by a test), the way Python users pass options to
aiokafka or nats-py; both go through the same `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from longboat.client.consume_from import ConsumeFrom
from longboat.client.errors import ClientUsageError
from longboat.protocol.allocate import AllocateStrategy, allocate_averagely
from longboat.protocol.trace import DEFAULT_TRACE_TOPIC

DEFAULT_OFFSET_STORE_DIR = Path.home() / ".longboat" / "offsets"


class MessageModel(Enum):
    # Each message to one member of the group; offsets on the broker.
    CLUSTERING = "CLUSTERING"
    # Each message to every member; offsets in a local file per member.
    BROADCASTING = "BROADCASTING"


def _at_least_one(settings: object, *names: str) -> None:
    for name in names:
        value = getattr(settings, name)
        if value < 1:
            raise ClientUsageError(f"{name} must be at least 1, not {value}")


def _positive(settings: object, *names: str) -> None:
    for name in names:
        value = getattr(settings, name)
        if not value > 0:
            raise ClientUsageError(f"{name} must be more than 0 seconds, not {value}")


@dataclass(frozen=True, slots=True)
class PullSettings:
    """What one queue's pull loop needs: batch, hold, timeouts, back-off after errors."""

    pull_batch_size: int = 32
    # Pause between pulls of one queue (0: pull again as soon as a result is handled).
    pull_interval: float = 0.0
    broker_suspend_timeout: float = 15.0
    pull_timeout: float = 30.0
    error_backoff: float = 1.0
    busy_backoff: float = 0.02
    max_backoff: float = 10.0
    # Mark pulls as a lite-pull consumer's (Java's LITE_PULL_MESSAGE flag).
    lite: bool = False


@dataclass(frozen=True, kw_only=True)
class ConsumerSettings:
    """What every consumer of a group means alike."""

    # Where a queue starts when the group has no committed offset for it.
    consume_from: ConsumeFrom = ConsumeFrom.LAST_OFFSET
    # With ConsumeFrom.TIMESTAMP (default: half an hour back, as RocketMQ's).
    consume_timestamp_ms: int | None = None
    allocate: AllocateStrategy = allocate_averagely
    # Seconds between rebalances when nothing triggers one sooner.
    rebalance_interval: float = 20.0
    pull_batch_size: int = 32
    # Messages buffered per queue before its pulls wait.
    pull_threshold_for_queue: int = 1000
    # How long the broker may hold a pull that found nothing; our wait for it must be longer.
    broker_suspend_timeout: float = 15.0
    pull_timeout: float = 30.0

    def __post_init__(self) -> None:
        _at_least_one(self, "pull_batch_size", "pull_threshold_for_queue")
        _positive(self, "rebalance_interval", "broker_suspend_timeout")
        if self.pull_timeout <= self.broker_suspend_timeout:
            raise ClientUsageError(
                "pull_timeout must exceed broker_suspend_timeout, or held pulls time out"
            )
        if self.consume_from is ConsumeFrom.TIMESTAMP and self.consume_timestamp_ms is None:
            half_an_hour_ago = int(time.time() * 1000) - 30 * 60 * 1000
            object.__setattr__(self, "consume_timestamp_ms", half_an_hour_ago)

    def pull_settings(self) -> PullSettings:
        """What the pull loop of each queue needs of these settings."""
        return PullSettings(
            pull_batch_size=self.pull_batch_size,
            broker_suspend_timeout=self.broker_suspend_timeout,
            pull_timeout=self.pull_timeout,
        )


@dataclass(frozen=True, kw_only=True)
class PushConsumerSettings(ConsumerSettings):
    """A push consumer's settings (names and defaults of Java's DefaultMQPushConsumer)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    # Listener calls running at once (threads for plain functions).
    consume_thread_max: int = 20
    # Messages handed to one listener call.
    consume_message_batch_max_size: int = 1
    # Pause between pulls of one queue (0: pull again as soon as a result is handled).
    pull_interval: float = 0.0
    pull_threshold_size_for_queue: int = 100 * 1024 * 1024
    # Concurrent listeners: how far the committed offset may lag the newest pulled message.
    consume_concurrently_max_span: int = 2000
    # Redeliveries before a message goes to the DLQ: None or -1 (Java's default value) means
    # 16 for concurrent listeners and unbounded for orderly ones; 0 means no redelivery.
    max_reconsume_times: int | None = None
    # Orderly listeners: the pause after SUSPEND_CURRENT_QUEUE_A_MOMENT.
    suspend_current_queue_time: float = 1.0
    # Concurrent listeners: a message whose listener call runs longer than this (seconds;
    # Java's consumeTimeout, 15 minutes) is sent back to be consumed again later and stops
    # holding its queue's committed offset.
    consume_timeout: float = 15 * 60.0
    # How long a rebalance waits for a dropped queue's running listeners.
    drop_timeout: float = 30.0
    # How long shutdown waits for running listeners.
    shutdown_timeout: float = 30.0
    # Retry of a failed message the broker would not take back, in this process.
    local_retry_delay: float = 5.0
    # Broadcasting: where each member keeps its offsets.
    offset_store_dir: Path | str = DEFAULT_OFFSET_STORE_DIR
    # Start even when no name server answers (RocketMQ's behaviour), instead of raising
    # TransportError after one request timeout per name server.
    lenient_start: bool = False
    # RocketMQ's trace records of each delivery, written to trace_topic (Java's
    # enableMsgTrace / customizedTraceTopic); OpenTelemetry receive and process spans (the
    # `otel` extra).  See docs/client.md, Tracing.
    enable_trace: bool = False
    trace_topic: str = DEFAULT_TRACE_TOPIC
    open_telemetry: bool = False

    def __post_init__(self) -> None:
        ConsumerSettings.__post_init__(self)
        _at_least_one(
            self,
            "consume_thread_max",
            "consume_message_batch_max_size",
            "pull_threshold_size_for_queue",
            "consume_concurrently_max_span",
        )
        if self.pull_interval < 0:
            raise ClientUsageError(f"pull_interval must not be negative, not {self.pull_interval}")
        if self.max_reconsume_times == -1:
            object.__setattr__(self, "max_reconsume_times", None)
        elif self.max_reconsume_times is not None and self.max_reconsume_times < 0:
            raise ClientUsageError(
                "max_reconsume_times must be -1 or None (the default), 0 (no redelivery) or "
                f"more, not {self.max_reconsume_times}"
            )
        _positive(self, "drop_timeout", "shutdown_timeout", "local_retry_delay", "consume_timeout")
        object.__setattr__(self, "offset_store_dir", Path(self.offset_store_dir))

    def pull_settings(self) -> PullSettings:
        return dataclasses.replace(super().pull_settings(), pull_interval=self.pull_interval)


@dataclass(frozen=True, kw_only=True)
class LitePullSettings(ConsumerSettings):
    """A lite pull consumer's settings (names and defaults of Java's DefaultLitePullConsumer)."""

    pull_batch_size: int = 10
    broker_suspend_timeout: float = 20.0
    # Commit polled positions every `auto_commit_interval` s (during poll) and at shutdown.
    auto_commit: bool = True
    auto_commit_interval: float = 5.0
    # Messages buffered over all queues before every pull waits.
    pull_threshold_for_all: int = 10_000

    def __post_init__(self) -> None:
        ConsumerSettings.__post_init__(self)
        _at_least_one(self, "pull_threshold_for_all")
        _positive(self, "auto_commit_interval")

    def pull_settings(self) -> PullSettings:
        return dataclasses.replace(super().pull_settings(), lite=True)


class ConsumerOptions(TypedDict, total=False):
    """`ConsumerSettings`' fields as keyword arguments."""

    consume_from: ConsumeFrom
    consume_timestamp_ms: int | None
    allocate: AllocateStrategy
    rebalance_interval: float
    pull_batch_size: int
    pull_threshold_for_queue: int
    broker_suspend_timeout: float
    pull_timeout: float


class PushConsumerOptions(ConsumerOptions, total=False):
    """`PushConsumerSettings`' fields as keyword arguments."""

    message_model: MessageModel
    consume_thread_max: int
    consume_message_batch_max_size: int
    pull_interval: float
    pull_threshold_size_for_queue: int
    consume_concurrently_max_span: int
    max_reconsume_times: int | None
    suspend_current_queue_time: float
    consume_timeout: float
    drop_timeout: float
    shutdown_timeout: float
    local_retry_delay: float
    offset_store_dir: Path | str
    lenient_start: bool
    enable_trace: bool
    trace_topic: str
    open_telemetry: bool


class LitePullOptions(ConsumerOptions, total=False):
    """`LitePullSettings`' fields as keyword arguments."""

    auto_commit: bool
    auto_commit_interval: float
    pull_threshold_for_all: int


S = TypeVar("S", bound=ConsumerSettings)


def settings_with(settings: S, options: dict[str, Any]) -> S:
    """`settings` with `options` (field names) replaced, validated again."""
    if not options:
        return settings
    known = {f.name for f in dataclasses.fields(settings)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ClientUsageError(f"unknown {type(settings).__name__} option(s): {', '.join(unknown)}")
    return dataclasses.replace(settings, **options)
