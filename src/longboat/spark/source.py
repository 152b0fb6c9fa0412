"""The `longboat` data source: batch and streaming reads of topics, and the entry to the sink.

Where each piece runs (Spark decides; see docs/spark.md): options are parsed and the batch is
planned in a planner process; a stream's offsets are tracked by one long-lived "source runner"
process per query; `read()` runs in executor workers, one task per `QueueRange`.  Reader
objects are pickled between them, so they carry only parsed options and open the broker link
lazily (`__getstate__` drops it).

Stream offsets and their invariants:

* an offset is `{"topic": {"broker:queue": next_offset}}` with sorted keys (`offsets.py`);
  Spark compares offsets as JSON strings, so equal positions must give equal strings;
* `latestOffset` never drops a queue it has seen and never moves a queue backwards;
  queues that appear later (topic expanded, pattern matched a new topic) are added and read
  from their first kept message;
* `partitions(start, end)` depends on nothing but its arguments and the options, so a
  micro-batch replayed after a failure reads the very same ranges;
* under `Trigger.AvailableNow` the end is clamped to the high-water marks taken in
  `prepareForTriggerAvailableNow`, so the query stops by itself even while producers write;
* `commit(end)` arrives one micro-batch late (Spark calls it when it plans the next batch),
  so the `consumerGroup` offsets written there are the end of the last batch Spark has
  *committed*: they trail the sink by at most one micro-batch and never run ahead of it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    Filter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from longboat.client import PullStatus
from longboat.protocol.message import decode_records
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import MessageQueue
from longboat.spark.arrow import SCHEMA, decode_to_batch, messages_to_batch
from longboat.spark.connection import BrokerLink, link
from longboat.spark.offsets import EARLIEST, LATEST, Offsets, from_offsets, to_offsets
from longboat.spark.options import (
    DEFAULT_PULL_BATCH_SIZE,
    OptionError,
    ReadOptions,
    check_read_names,
    parse_read_options,
)
from longboat.spark.planning import QueueRange, plan_ranges, spread_limit
from longboat.spark.pushdown import KEY_LOOKUP_MAX, Pushed, push

log = logging.getLogger(__name__)

# Rows per Arrow batch handed to Spark: big enough to amortise per-batch costs.
ARROW_BATCH_ROWS = 8192
# Broker high-water marks are asked at most this often; Spark polls `latestOffset` every
# 10 ms when idle, and would otherwise send a request per queue each time.
HWM_MIN_INTERVAL_S = 0.1
# How long a stream trusts its list of queues before asking the name server again.
QUEUE_REFRESH_S = 5.0


class DataLossError(RuntimeError):
    """Messages the query must read are no longer on the broker (retention deleted them, or
    the queue was reset).  Not retriable: restart with failOnDataLoss=false to skip them."""


class LongboatDataSource(DataSource):
    """`spark.read.format("longboat")`, `readStream`, `write` and `writeStream`."""

    @classmethod
    def name(cls) -> str:
        return "longboat"

    def schema(self) -> StructType:
        check_read_names(self.options)
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse_read_options(self.options, streaming=False)
        # Spark refuses a reader with pushFilters unless the session enables pushdown, so it
        # is offered only to queries that ask for it (`filterPushdown`, docs/spark.md).
        return FilteringBatchReader(opts) if opts.filter_pushdown else BatchReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from longboat.spark.sink import BatchWriter

        return BatchWriter.create(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from longboat.spark.sink import StreamWriter

        return StreamWriter.create(self.options, schema)


class _LinkHolder:
    """Options travel; the broker link is opened lazily in whichever process uses it."""

    def __init__(self, options: ReadOptions) -> None:
        self.opts = options
        self._link: BrokerLink | None = None

    @property
    def link(self) -> BrokerLink:
        if self._link is None:
            self._link = link(self.opts.namesrv, self.opts.request_timeout)
        return self._link

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_link"] = None
        return state

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, QueueRange)
        return read_range(self.link, self.opts, partition)


def resolve_start(
    bl: BrokerLink, opts: ReadOptions, queues: list[MessageQueue]
) -> dict[MessageQueue, int]:
    """The first offset to read of each queue, as the starting options say."""
    if opts.starting_timestamp is not None:
        return bl.offsets(queues, opts.starting_timestamp)
    if opts.starting_by_timestamp is not None:
        default = "max" if opts.ending is None else "min"  # streaming starts late by default
        return by_timestamp(
            bl, "startingOffsetsByTimestamp", opts.starting_by_timestamp, queues, default
        )
    if opts.starting == "earliest":
        return bl.offsets(queues, "min")
    if opts.starting == "latest":
        return bl.offsets(queues, "max")
    assert isinstance(opts.starting, dict)
    return _resolve_json(bl, "startingOffsets", opts.starting, queues, default=EARLIEST)


def _named_queues(
    option: str, given: Offsets, queues: list[MessageQueue]
) -> dict[MessageQueue, int]:
    """The positions an option's JSON names, each of a queue the topics have."""
    wanted = from_offsets(given)
    unknown = sorted(set(wanted) - set(queues))
    if unknown:
        raise OptionError(
            option, f"names queues the topics do not have: {', '.join(map(str, unknown))}"
        )
    return wanted


def by_timestamp(
    bl: BrokerLink, option: str, given: Offsets, queues: list[MessageQueue], default: str
) -> dict[MessageQueue, int]:
    """Per queue, the first offset stored at or after its time (Kafka's *ByTimestamp); the
    queues not named at `default` ("min" or "max")."""
    wanted = _named_queues(option, given, queues)
    positions = bl.offsets([mq for mq in queues if mq not in wanted], default)
    for ts in sorted(set(wanted.values())):
        positions.update(bl.offsets([mq for mq, t in wanted.items() if t == ts], ts))
    return positions


def _resolve_json(
    bl: BrokerLink,
    option: str,
    given: Offsets,
    queues: list[MessageQueue],
    *,
    default: int | None,
) -> dict[MessageQueue, int]:
    wanted = _named_queues(option, given, queues)
    chosen = {mq: wanted.get(mq, default) for mq in queues}
    picked = {mq: o for mq, o in chosen.items() if o is not None}
    need_min = [mq for mq, o in picked.items() if o == EARLIEST]
    need_max = [mq for mq, o in picked.items() if o == LATEST]
    if need_min:
        picked.update(bl.offsets(need_min, "min"))
    if need_max:
        picked.update(bl.offsets(need_max, "max"))
    return picked


# ---------------------------------------------------------------------------- reading ranges


def read_range(bl: BrokerLink, opts: ReadOptions, part: QueueRange) -> Iterator[pa.RecordBatch]:
    """The messages of `part` as Arrow batches.  Pulls run ahead of the decoding (`_Pulls`)."""
    mq = part.mq
    expression = TagExpression.parse(opts.tags)
    exact = None if expression.matches_all else expression.tags
    # With a tag filter an answer spans the entries it scanned, matched or not: as even as
    # without one where the filter takes every entry, or every other, or none (the broker's
    # scan limit); where spans vary, the window falls back to one pull ahead by itself.
    pulls = _Pulls(bl, opts, part, PULLS_AHEAD)
    offset = part.start
    # Pull answers are decoded together, ARROW_BATCH_ROWS at a time: the columnar decoder's
    # cost is mostly per call, not per record.
    bodies: list[bytes] = []
    counted = 0
    while offset < part.end:
        result = pulls.take(offset)
        status = result.status
        if status is PullStatus.FOUND or status is PullStatus.NO_MATCHED_MSG:
            next_offset = result.next_begin_offset
            if next_offset <= offset:
                raise RuntimeError(f"broker did not advance {mq} past offset {offset}")
            pulls.answered(offset, next_offset)
            if status is PullStatus.FOUND:
                bodies.append(result.body)
                counted += next_offset - offset
                if counted >= ARROW_BATCH_ROWS:
                    yield _decode(b"".join(bodies), part, exact)
                    bodies, counted = [], 0
            offset = next_offset
            continue
        # OFFSET_ILLEGAL or NO_NEW_MSG inside a range that existed when it was planned.
        if status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset:
            resume = min(result.min_offset, part.end)
        else:
            resume = part.end
        _lost(opts, part, offset, resume, result.min_offset, result.max_offset)
        offset = resume
    if bodies:
        yield _decode(b"".join(bodies), part, exact)


# Pulls of one range in flight at once when their offsets can be foreseen: the broker serves
# some while the task waits on or decodes another.  A range keeps about PULL_WINDOW queue
# entries in flight (messages, without a tag filter): PULLS_AHEAD pulls of the default size, or
# as many smaller pulls as span that many (up to MAX_PULLS_IN_FLIGHT) when pulls are small,
# asked so or capped by the broker (RocketMQ's default cap is 32): one round trip per 32
# messages would leave the task waiting, and pulls that reach a Longboat broker in one read are
# answered in one write.
PULLS_AHEAD = 3
PULL_WINDOW = PULLS_AHEAD * DEFAULT_PULL_BATCH_SIZE
MAX_PULLS_IN_FLIGHT = 32


class _Pulls:
    """The pulls of one range in flight, in offset order.  Beyond the one the last answer
    placed, each starts where the one before should end, by the span the last answer covered
    (the broker's cap per pull, once one answer showed it); when an answer ends elsewhere,
    the guesses are dropped (their answers are ignored) and pulling resumes where it ended.
    The first miss is expected (the broker's cap is not known before an answer shows it); a
    second means spans vary (answers cut by bytes, or a tag filter matching unevenly), and the
    range goes on one pull ahead, so the broker serves at most two windows' worth of pulls
    that are thrown away (about PULL_WINDOW entries each).  `ahead` is PULLS_AHEAD (1 only
    in tests of that last state); the window deepens only once an answer has shown the span.
    A span counts queue entries: with a tag filter it can exceed the pull's size."""

    def __init__(self, bl: BrokerLink, opts: ReadOptions, part: QueueRange, ahead: int) -> None:
        self._bl, self._opts, self._part, self._ahead = bl, opts, part, ahead
        self._in_flight: deque[tuple[int, Any]] = deque()
        self._next = part.start
        self._span = opts.pull_batch_size
        self._span_seen = False
        self._misses = 0

    def take(self, offset: int) -> Any:
        """The answer of the pull at `offset` (started now if no pull in flight starts there)."""
        if not self._in_flight or self._in_flight[0][0] != offset:
            self._restart(offset)
        self._fill()
        return self._in_flight.popleft()[1].result()

    def answered(self, offset: int, next_offset: int) -> None:
        """The pull at `offset` covered up to `next_offset`: learn its span, keep the pulls in
        flight only if the next one starts there, and top the window up."""
        self._span = next_offset - offset
        self._span_seen = True
        if not self._in_flight or self._in_flight[0][0] != next_offset:
            if self._in_flight:  # a guess was wrong
                self._misses += 1
                if self._misses > 1:
                    self._ahead = 1
            self._restart(next_offset)
        self._fill()

    def _restart(self, offset: int) -> None:
        self._in_flight.clear()
        self._next = offset

    def depth(self) -> int:
        """How many pulls to keep in flight: `ahead` until an answer has shown the span
        (and one once spans vary), then enough to span PULL_WINDOW entries at the last span,
        at least `ahead` and at most MAX_PULLS_IN_FLIGHT."""
        if self._ahead == 1 or not self._span_seen:
            return self._ahead
        return min(MAX_PULLS_IN_FLIGHT, max(self._ahead, -(-PULL_WINDOW // self._span)))

    def _fill(self) -> None:
        end, depth, step = self._part.end, self.depth(), self._span
        while len(self._in_flight) < depth and self._next < end:
            self._in_flight.append(
                (self._next, _pull(self._bl, self._opts, self._part, self._next))
            )
            self._next += step


def _pull(bl: BrokerLink, opts: ReadOptions, part: QueueRange, offset: int) -> Any:
    count = min(opts.pull_batch_size, part.end - offset)
    return bl.pull_async(part.mq, offset, count, opts.tags, opts.pull_group)


def _decode(body: bytes, part: QueueRange, tags: frozenset[str] | None) -> pa.RecordBatch:
    batch = decode_to_batch(body, part.topic, part.broker, part.end, tags)
    if batch is not None:
        return batch
    messages = [
        m
        for m in decode_records(body, decompress=True)
        if m.queue_offset < part.end and (tags is None or m.tags in tags)
    ]
    return messages_to_batch(messages, part.broker)


def _lost(
    opts: ReadOptions, part: QueueRange, frm: int, to: int, min_offset: int, max_offset: int
) -> None:
    if part.new_queue and to <= min_offset:
        return  # a queue found after the start: it begins at its first kept message
    what = (
        f"{part.mq}: offsets [{frm}, {to}) are no longer on broker {part.broker} "
        f"(it keeps [{min_offset}, {max_offset}))"
    )
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{what}. Retention deleted them or the queue was reset. Set failOnDataLoss=false "
            f"to skip missing messages (they are logged)."
        )
    log.warning("skipping lost messages: %s", what)


# ---------------------------------------------------------------------------- batch


class BatchReader(_LinkHolder, DataSourceReader):
    """`spark.read`: from the starting offsets (or time) to the ending ones, planned once,
    narrowed by the filters Spark pushed, if any (`FilteringBatchReader`)."""

    def __init__(self, options: ReadOptions) -> None:
        super().__init__(options)
        self._pushed = Pushed()

    def partitions(self) -> list[QueueRange]:
        bl, opts, pushed = self.link, self.opts, self._pushed
        if pushed.tags is not None and not pushed.tags:
            return []
        queues = [
            mq
            for mq in bl.queues(opts.topics, opts.topic_pattern)
            if pushed.queue_allowed(mq.topic, mq.broker_name, mq.queue_id)
        ]
        start = resolve_start(bl, opts, queues)
        if opts.ending_timestamp is not None:
            end = bl.offsets(queues, opts.ending_timestamp)
        elif opts.ending_by_timestamp is not None:
            end = by_timestamp(
                bl, "endingOffsetsByTimestamp", opts.ending_by_timestamp, queues, "max"
            )
        elif opts.ending == "latest":
            end = bl.offsets(queues, "max")
        else:
            assert isinstance(opts.ending, dict)
            end = _resolve_json(bl, "endingOffsets", opts.ending, queues, default=None)
        start = {mq: o for mq, o in start.items() if mq in end}
        start, end = self._narrowed(queues, start, end)
        if pushed.keys:
            return self._keyed_ranges(queues, start, end, pushed.keys[0])
        return plan_ranges(start, end, opts.max_offsets_per_partition, opts.min_partitions)

    def _narrowed(
        self,
        queues: list[MessageQueue],
        start: dict[MessageQueue, int],
        end: dict[MessageQueue, int],
    ) -> tuple[dict[MessageQueue, int], dict[MessageQueue, int]]:
        """The pushed queue-offset and store-time bounds applied to the planned ranges."""
        pushed, bl = self._pushed, self.link
        lo, hi = pushed.offsets
        lo_ms, hi_ms = pushed.time_ms
        by_lo = bl.offsets(queues, lo_ms) if lo_ms is not None and queues else {}
        by_hi = bl.offsets(queues, hi_ms) if hi_ms is not None and queues else {}
        start = {
            mq: int(max(o, lo if lo > -math.inf else o, by_lo.get(mq, o)))
            for mq, o in start.items()
        }
        end = {
            mq: int(min(o, hi if hi < math.inf else o, by_hi.get(mq, o))) for mq, o in end.items()
        }
        return start, end

    def _keyed_ranges(
        self,
        queues: list[MessageQueue],
        start: dict[MessageQueue, int],
        end: dict[MessageQueue, int],
        key: str,
    ) -> list[QueueRange]:
        """One-offset ranges at the key index's candidates, unless there are too many to
        trust the index's answer (then the ranges as planned)."""
        hits = self.link.keyed(queues, key, KEY_LOOKUP_MAX) if queues else set()
        if hits is None:
            return plan_ranges(
                start, end, self.opts.max_offsets_per_partition, self.opts.min_partitions
            )
        return [
            QueueRange(mq.topic, mq.broker_name, mq.queue_id, o, o + 1)
            for mq, o in sorted(hits)
            if start.get(mq, 0) <= o < end.get(mq, 0)
        ]


class FilteringBatchReader(BatchReader):
    """A batch reader that takes the filters Spark pushes (`pushdown.py`)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        self._pushed, keep = push(list(filters))
        tags = self._pushed.tags
        if tags is not None:
            mine = TagExpression.parse(self.opts.tags)
            allowed = tags if mine.matches_all else tags & mine.tags
            # No tag left: nothing can match (`partitions` plans no range).
            self.opts = dataclasses.replace(self.opts, tags=" || ".join(sorted(allowed)) or "*")
            self._pushed.tags = frozenset(allowed)
        return keep


# ---------------------------------------------------------------------------- streaming


class StreamReader(_LinkHolder, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`spark.readStream`: micro-batches over moving high-water marks, admission-controlled."""

    def __init__(self, options: ReadOptions) -> None:
        super().__init__(options)
        self._initial: Offsets | None = None
        self._queues: list[MessageQueue] = []
        self._queues_at = -QUEUE_REFRESH_S
        self._hwm: dict[MessageQueue, int] = {}
        self._hwm_at = -HWM_MIN_INTERVAL_S
        self._target: dict[MessageQueue, int] | None = None
        self._last_batch_at: float | None = None  # when minOffsetsPerTrigger last admitted

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.update(_queues=[], _queues_at=-QUEUE_REFRESH_S, _hwm={}, _hwm_at=-HWM_MIN_INTERVAL_S)
        return state

    def _current_queues(self) -> list[MessageQueue]:
        now = time.monotonic()
        if now - self._queues_at >= QUEUE_REFRESH_S:
            self._queues = self.link.queues(self.opts.topics, self.opts.topic_pattern)
            self._queues_at = now
        return self._queues

    def _high_water_marks(self) -> dict[MessageQueue, int]:
        now = time.monotonic()
        if now - self._hwm_at >= HWM_MIN_INTERVAL_S:
            queues = self._current_queues()
            self._hwm = self.link.offsets(queues, "max") if queues else {}
            self._hwm_at = now
        return self._hwm

    def initialOffset(self) -> Offsets:
        # Spark asks twice on a fresh query; both answers must agree.
        if self._initial is None:
            queues = self._current_queues()
            self._initial = to_offsets(resolve_start(self.link, self.opts, queues))
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        cap = self.opts.max_offsets_per_trigger
        return ReadMaxRows(cap) if cap else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._hwm_at = -HWM_MIN_INTERVAL_S
        self._target = dict(self._high_water_marks())

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        positions = from_offsets(start)
        available = dict(self._high_water_marks())
        if self._target is not None:
            available = {
                mq: min(o, self._target[mq]) for mq, o in available.items() if mq in self._target
            }
        for mq, at in positions.items():
            available[mq] = max(at, available.get(mq, at))
        if isinstance(limit, ReadMaxRows):
            available = spread_limit(positions, available, limit.max_rows)
        if not self._admitted(positions, available):
            return to_offsets(positions)  # the same offsets: no micro-batch yet
        return to_offsets(available)

    def _admitted(
        self, positions: dict[MessageQueue, int], available: dict[MessageQueue, int]
    ) -> bool:
        """minOffsetsPerTrigger with maxTriggerDelay, as Kafka's source: a micro-batch waits
        until that many messages are new, unless `maxTriggerDelay` has passed since the last
        one (the first batch of a query waits too; it starts the clock).  Trigger.AvailableNow
        ignores it, as Kafka's source does."""
        wanted = self.opts.min_offsets_per_trigger
        if wanted is None or self._target is not None:  # AvailableNow reads all, as Kafka's
            return True
        now = time.monotonic()
        if self._last_batch_at is None:
            self._last_batch_at = now
        new = sum(max(0, o - positions.get(mq, 0)) for mq, o in available.items())
        if new >= wanted or (new and now - self._last_batch_at >= self.opts.max_trigger_delay):
            self._last_batch_at = now
            return True
        return False

    def reportLatestOffset(self) -> Offsets:
        return to_offsets(self._hwm)

    def partitions(self, start: Offsets, end: Offsets) -> list[QueueRange]:
        return plan_ranges(
            from_offsets(start),
            from_offsets(end),
            self.opts.max_offsets_per_partition,
            self.opts.min_partitions,
        )

    def commit(self, end: Offsets) -> None:
        group = self.opts.consumer_group
        if group is None:
            return
        try:
            self.link.commit_group(group, from_offsets(end))
        except Exception as exc:  # progress reporting must never fail the query
            log.warning("could not store progress of consumer group %s: %s", group, exc)

    def stop(self) -> None:
        self._link = None
