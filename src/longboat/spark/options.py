"""Every option of the `longboat` data source, parsed and checked before any work starts.

Spark hands options over as a case-insensitive mapping of strings (keys lower-cased).  A typo
in an option name must not silently fall back to a default, so anything this module does not
know fails at once, naming the option; so does any malformed value.  The same parsed options
travel (pickled) to every worker, so parsing happens exactly once, in the planner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from longboat.spark.offsets import Offsets, parse_offsets

DEFAULT_CONSUMER_GROUP = "longboat-spark"
DEFAULT_PRODUCER_GROUP = "longboat-spark-sink"
DEFAULT_MAX_OFFSETS_PER_PARTITION = 200_000
DEFAULT_PULL_BATCH_SIZE = 1024  # brokers cap it (RocketMQ and Longboat: 32 by default)
DEFAULT_SEND_BATCH_SIZE = 256
DEFAULT_REQUEST_TIMEOUT_S = 10.0
DEFAULT_MAX_TRIGGER_DELAY_S = 15 * 60.0  # Kafka's maxTriggerDelay default


class OptionError(ValueError):
    """An option given to the `longboat` data source is unknown, missing or malformed
    (the caller's mistake; nothing was read or written)."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"longboat option '{option}': {problem}")
        self.option = option


# Spark's own name for each option (the keys arrive lower-cased).
_READ_OPTIONS = (
    "namesrv",
    "topic",
    "topicPattern",
    "tags",
    "startingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsets",
    "endingTimestamp",
    "endingOffsetsByTimestamp",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "maxOffsetsPerPartition",
    "maxRecordsPerPartition",
    "minPartitions",
    "filterPushdown",
    "failOnDataLoss",
    "consumerGroup",
    "pullBatchSize",
    "requestTimeout",
)
_WRITE_OPTIONS = (
    "namesrv",
    "topic",
    "producerGroup",
    "sendBatchSize",
    "exactlyOnce",
    "sinkId",
    "requestTimeout",
)
# Spark adds `path` (`.load(path)` / `.save(path)`) and a stream sink gets
# `checkpointLocation` and `queryName`; none of them means anything to this source.
_SPARK_SUPPLIED = ("path", "checkpointLocation", "queryName")

Start = Literal["earliest", "latest"] | Offsets
End = Literal["latest"] | Offsets | None


@dataclass(frozen=True, slots=True)
class ReadOptions:
    namesrv: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    tags: str
    starting: Start
    starting_timestamp: int | None
    ending: End
    ending_timestamp: int | None
    max_offsets_per_trigger: int | None
    max_offsets_per_partition: int
    fail_on_data_loss: bool
    consumer_group: str | None
    pull_batch_size: int
    request_timeout: float
    # Per-queue times (ms) to start / end at (Kafka's *OffsetsByTimestamp), same JSON shape
    # as offsets; queues not named take the default start / end.
    starting_by_timestamp: Offsets | None = None
    ending_by_timestamp: Offsets | None = None
    # Streaming admission: wait for this many new messages, but no longer than the delay (s).
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: float = DEFAULT_MAX_TRIGGER_DELAY_S
    # Split the planned ranges into at least this many Spark partitions (Kafka's).
    min_partitions: int | None = None
    # Batch: take the filters Spark pushes (needs spark.sql.python.filterPushdown.enabled).
    filter_pushdown: bool = False

    @property
    def pull_group(self) -> str:
        """The group named in pull requests (brokers log it; offsets are never committed)."""
        return self.consumer_group or DEFAULT_CONSUMER_GROUP

    def matches(self, topic: str) -> bool:
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in self.topics


@dataclass(frozen=True, slots=True)
class WriteOptions:
    namesrv: str
    topic: str | None
    producer_group: str
    send_batch_size: int
    exactly_once: bool
    sink_id: str | None
    request_timeout: float


def _lowered(names: tuple[str, ...]) -> dict[str, str]:
    return {n.lower(): n for n in names}


def _check_known(options: Mapping[str, str], known: tuple[str, ...], role: str) -> None:
    allowed = _lowered(known + _SPARK_SUPPLIED)
    for key in options:
        if key.lower() not in allowed:
            raise OptionError(
                key, f"unknown {role} option; known: {', '.join(sorted(known, key=str.lower))}"
            )


def _get(options: Mapping[str, str], name: str) -> str | None:
    for key, value in options.items():
        if key.lower() == name.lower():
            return None if value is None else str(value)
    return None


def _require(options: Mapping[str, str], name: str) -> str:
    value = _get(options, name)
    if value is None or not value.strip():
        raise OptionError(name, "is required")
    return value.strip()


# What `_number` reads an option as.
N = TypeVar("N", int, float)


def _number(
    options: Mapping[str, str], name: str, parse: Callable[[str], N], what: str
) -> N | None:
    """The option `name` read by `parse` (int or float); None when it is not given."""
    text = _get(options, name)
    if text is None:
        return None
    try:
        return parse(text.strip())
    except ValueError:
        raise OptionError(name, f"must be {what}, not {text!r}") from None


def _int(options: Mapping[str, str], name: str, *, minimum: int) -> int | None:
    value = _number(options, name, int, "an integer")
    if value is not None and value < minimum:
        raise OptionError(name, f"must be >= {minimum}, not {value}")
    return value


def _float(options: Mapping[str, str], name: str, default: float) -> float:
    value = _number(options, name, float, "a number of seconds")
    if value is None:
        return default
    if value <= 0:
        raise OptionError(name, f"must be > 0, not {value}")
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = _get(options, name)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise OptionError(name, f"must be true or false, not {text!r}")
    return lowered == "true"


def _offsets_option(options: Mapping[str, str], name: str, words: tuple[str, ...]) -> str | Offsets:
    text = _get(options, name)
    assert text is not None
    stripped = text.strip()
    if stripped.lower() in words:
        return stripped.lower()
    try:
        return parse_offsets(stripped)
    except (ValueError, json.JSONDecodeError) as exc:
        raise OptionError(
            name,
            f"must be {' or '.join(words)} or JSON {{topic: {{broker:queue: offset}}}} ({exc})",
        ) from None


def _duration(options: Mapping[str, str], name: str, default: float) -> float:
    """Seconds from Spark's duration forms: "15m", "30s", "500ms", "1h", or a plain number
    of seconds."""
    text = _get(options, name)
    if text is None:
        return default
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*", text.lower())
    if match is None:
        raise OptionError(name, f"must be a duration like 30s, 15m or 500ms, not {text!r}")
    unit = {"ms": 0.001, "s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[match.group(2)]
    return float(match.group(1)) * unit


def _exclusive(options: Mapping[str, str], *names: str) -> None:
    given = [n for n in names if _get(options, n) is not None]
    if len(given) > 1:
        raise OptionError(given[1], f"cannot be combined with {given[0]}")


def check_read_names(options: Mapping[str, str]) -> None:
    """Unknown read options, caught when the DataFrame is defined (before batch or stream is
    known; values are checked once it is)."""
    _check_known(options, _READ_OPTIONS, "read")


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    _check_known(options, _READ_OPTIONS, "read")
    namesrv = _require(options, "namesrv")
    topic_text = _get(options, "topic")
    pattern = _get(options, "topicPattern")
    if (topic_text is None) == (pattern is None):
        raise OptionError("topic", "give exactly one of 'topic' and 'topicPattern'")
    topics: tuple[str, ...] = ()
    if topic_text is not None:
        topics = tuple(sorted({t.strip() for t in topic_text.split(",") if t.strip()}))
        if not topics:
            raise OptionError("topic", "names no topic")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError("topicPattern", f"is not a valid regular expression: {exc}") from None
    starting: Start = "latest" if streaming else "earliest"
    if _get(options, "startingOffsets") is not None:
        starting = _offsets_option(options, "startingOffsets", ("earliest", "latest"))  # type: ignore[assignment]
    _exclusive(options, "startingOffsets", "startingTimestamp", "startingOffsetsByTimestamp")
    _exclusive(options, "endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
    _exclusive(options, "maxOffsetsPerPartition", "maxRecordsPerPartition")
    starting_ts = _int(options, "startingTimestamp", minimum=0)
    ending: End = None if streaming else "latest"
    ending_ts = _int(options, "endingTimestamp", minimum=0)
    if _get(options, "endingOffsets") is not None:
        if streaming:
            raise OptionError("endingOffsets", "applies to batch reads only")
        ending = _offsets_option(options, "endingOffsets", ("latest",))  # type: ignore[assignment]
        if ending_ts is not None:
            raise OptionError("endingTimestamp", "cannot be combined with endingOffsets")
    if streaming and ending_ts is not None:
        raise OptionError("endingTimestamp", "applies to batch reads only")
    starting_by_ts = ending_by_ts = None
    if _get(options, "startingOffsetsByTimestamp") is not None:
        starting_by_ts = _timestamps_option(options, "startingOffsetsByTimestamp")
    if _get(options, "endingOffsetsByTimestamp") is not None:
        if streaming:
            raise OptionError("endingOffsetsByTimestamp", "applies to batch reads only")
        ending_by_ts = _timestamps_option(options, "endingOffsetsByTimestamp")
    min_per_trigger = _int(options, "minOffsetsPerTrigger", minimum=1)
    if not streaming:
        for name in ("minOffsetsPerTrigger", "maxTriggerDelay"):
            if _get(options, name) is not None:
                raise OptionError(name, "applies to streaming reads only")
    max_per_trigger = _int(options, "maxOffsetsPerTrigger", minimum=1)
    if max_per_trigger is not None and not streaming:
        raise OptionError("maxOffsetsPerTrigger", "applies to streaming reads only")
    group = _get(options, "consumerGroup")
    if group is not None and not group.strip():
        raise OptionError("consumerGroup", "is empty")
    if group is not None and not streaming:
        raise OptionError("consumerGroup", "applies to streaming reads only")
    return ReadOptions(
        namesrv=namesrv,
        topics=topics,
        topic_pattern=pattern,
        tags=(_get(options, "tags") or "*").strip() or "*",
        starting=starting,
        starting_timestamp=starting_ts,
        ending=ending,
        ending_timestamp=ending_ts,
        max_offsets_per_trigger=max_per_trigger,
        max_offsets_per_partition=_int(options, "maxOffsetsPerPartition", minimum=1)
        or _int(options, "maxRecordsPerPartition", minimum=1)
        or DEFAULT_MAX_OFFSETS_PER_PARTITION,
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        consumer_group=group.strip() if group else None,
        pull_batch_size=_int(options, "pullBatchSize", minimum=1) or DEFAULT_PULL_BATCH_SIZE,
        request_timeout=_float(options, "requestTimeout", DEFAULT_REQUEST_TIMEOUT_S),
        starting_by_timestamp=starting_by_ts,
        ending_by_timestamp=ending_by_ts,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay=_duration(options, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY_S),
        min_partitions=_int(options, "minPartitions", minimum=1),
        filter_pushdown=_pushdown_option(options, streaming),
    )


def _pushdown_option(options: Mapping[str, str], streaming: bool) -> bool:
    on = _bool(options, "filterPushdown", False)
    if on and streaming:
        raise OptionError("filterPushdown", "applies to batch reads only")
    return on


def _timestamps_option(options: Mapping[str, str], name: str) -> Offsets:
    """`{topic: {"broker:queue": epoch_ms}}`, checked (no -1/-2 shorthands here)."""
    text = _get(options, name)
    assert text is not None
    try:
        parsed = parse_offsets(text.strip())
    except (ValueError, json.JSONDecodeError) as exc:
        raise OptionError(
            name, f"must be JSON {{topic: {{broker:queue: epoch ms}}}} ({exc})"
        ) from None
    if any(ts < 0 for queues in parsed.values() for ts in queues.values()):
        raise OptionError(name, "times are epoch milliseconds, >= 0")
    return parsed


def parse_write_options(options: Mapping[str, str], *, streaming: bool) -> WriteOptions:
    _check_known(options, _WRITE_OPTIONS, "write")
    exactly_once = _bool(options, "exactlyOnce", False)
    sink_id = _get(options, "sinkId")
    if exactly_once and not streaming:
        raise OptionError(
            "exactlyOnce", "applies to streaming writes (a batch write is never replayed)"
        )
    if exactly_once and not (sink_id and sink_id.strip()):
        raise OptionError(
            "sinkId",
            "is required with exactlyOnce=true: a name that stays the same across restarts "
            "of this query (it keys the published-batch marker on the broker)",
        )
    if sink_id is not None and not exactly_once:
        raise OptionError("sinkId", "only means something with exactlyOnce=true")
    topic = _get(options, "topic")
    return WriteOptions(
        namesrv=_require(options, "namesrv"),
        topic=topic.strip() if topic and topic.strip() else None,
        producer_group=(_get(options, "producerGroup") or DEFAULT_PRODUCER_GROUP).strip(),
        send_batch_size=_int(options, "sendBatchSize", minimum=1) or DEFAULT_SEND_BATCH_SIZE,
        exactly_once=exactly_once,
        sink_id=sink_id.strip() if sink_id else None,
        request_timeout=_float(options, "requestTimeout", DEFAULT_REQUEST_TIMEOUT_S),
    )
