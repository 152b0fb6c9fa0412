"""The `longboat` sink: DataFrames and streams published to topics.

Two delivery modes for streams (batch writes are always at-least-once):

* **at-least-once** (default): each task publishes its rows from the executor, in batch sends
  with a few in flight.  A task or micro-batch that Spark runs again publishes again.
* **exactlyOnce=true, sinkId=…**: tasks only *stage* their rows (returned to the driver in
  the commit message); `commit(messages, batchId)` publishes them from the driver in a fixed
  order, in chunks sent one at a time, each message carrying a deterministic UNIQ_KEY
  derived from (sinkId, batchId, topic, chunk, index).  A durable marker — the consumer
  offset of group `longboat-sink-<sinkId>` on the topic's first queue — records
  "every batch before N is published".  A replayed commit skips topics whose marker is past
  the batch, and otherwise finds the first chunk not yet stored by looking its first UNIQ_KEY
  up in the broker's index (chunks are stored whole and in order, so the stored ones form a
  prefix: a binary search finds the end).  A send that timed out is looked up the same way
  before it is sent again.  Limits: the micro-batch travels through the driver (size it with
  the source's maxOffsetsPerTrigger), and the lookup relies on the broker's UNIQ_KEY index.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Coroutine, Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Self

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from longboat.client.errors import TransportError
from longboat.client.message import Message, SendResult
from longboat.spark.arrow import SINK_COLUMNS, OutgoingRow, check_sink_schema, rows_of
from longboat.spark.connection import BrokerLink, link
from longboat.spark.options import WriteOptions, parse_write_options
from longboat.spark.sink_encode import (
    Cut,
    EncodedChunk,
    encode_chunks,
    listed_keys,
    reserved_keys,
    row_topics,
)

log = logging.getLogger(__name__)

# Batch sends a task keeps in flight at once (at-least-once mode).
SENDS_IN_FLIGHT = 4
# Bytes of bodies per batch send, well under the broker's 4 MiB message limit.
CHUNK_BYTES = 1024 * 1024
SEND_ATTEMPTS = 3


@dataclass
class SinkCommit(WriterCommitMessage):
    """What a task reports: how many rows it published, or (exactly-once) the staged rows."""

    partition: int
    published: int = 0
    staged: list[pa.RecordBatch] = field(default_factory=list)


def marker_group(sink_id: str) -> str:
    return f"longboat-sink-{sink_id}"


def _messages(rows: Iterable[OutgoingRow]) -> Iterator[Message]:
    for r in rows:
        yield Message(
            topic=r.topic, body=r.body, tags=r.tags, keys=r.keys, properties=r.properties or {}
        )


def chunks(
    messages: Iterable[Message], max_count: int, max_bytes: int = CHUNK_BYTES
) -> Iterator[list[Message]]:
    """Consecutive runs of one topic, at most `max_count` messages and `max_bytes` of bodies
    (at least one message)."""
    chunk: list[Message] = []
    size = 0
    for m in messages:
        if chunk and (
            m.topic != chunk[0].topic or len(chunk) >= max_count or size + len(m.body) > max_bytes
        ):
            yield chunk
            chunk, size = [], 0
        chunk.append(m)
        size += len(m.body)
    if chunk:
        yield chunk


def publish_at_least_once(
    bl: BrokerLink, opts: WriteOptions, batches: Iterable[pa.RecordBatch]
) -> int:
    """Send every row, a few batch sends in flight; raises on the first failed send.  A batch
    is encoded column-wise (`sink_encode`) unless a row needs the per-message path."""
    producer = bl.producer(opts.producer_group)
    in_flight: list[Future[SendResult]] = []
    count = 0
    for batch in batches:
        encoded = encode_chunks(
            batch,
            opts.topic,
            max_count=opts.send_batch_size,
            max_body_bytes=CHUNK_BYTES,
            keys=reserved_keys(producer.reserve_uniq_keys),
        )
        if encoded is None:
            sends: Iterator[tuple[Coroutine[Any, Any, SendResult], int]] = (
                (producer.send_own_batch(chunk), len(chunk))
                for chunk in chunks(_messages(rows_of([batch], opts.topic)), opts.send_batch_size)
            )
        else:
            sends = (
                (producer.send_encoded_batch(c.topic, c.body, c.msg_ids), c.count) for c in encoded
            )
        for send, sent in sends:
            in_flight.append(bl.submit(send))
            count += sent
            if len(in_flight) >= SENDS_IN_FLIGHT:
                in_flight.pop(0).result()
    for f in in_flight:
        f.result()
    return count


class _Writer:
    streaming = False

    def __init__(self, options: WriteOptions) -> None:
        self.opts = options

    @classmethod
    def create(cls, options: Mapping[str, str], schema: StructType) -> Self:
        """Check options and columns in the planner, before any task runs."""
        opts = parse_write_options(options, streaming=cls.streaming)
        check_sink_schema(schema, opts.topic)
        return cls(opts)

    @property
    def link(self) -> BrokerLink:
        return link(self.opts.namesrv, self.opts.request_timeout)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        partition = _partition_id()
        if self.opts.exactly_once:
            staged = [_project(b) for b in iterator if b.num_rows]
            return SinkCommit(partition, staged=staged)
        count = publish_at_least_once(self.link, self.opts, iterator)
        return SinkCommit(partition, published=count)


def _partition_id() -> int:
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _project(batch: pa.RecordBatch) -> pa.RecordBatch:
    names = [n for n in SINK_COLUMNS if n in batch.schema.names]
    return batch.select(names)


class BatchWriter(_Writer, DataSourceArrowWriter):
    """`df.write.format("longboat")`: at-least-once, published by the tasks."""


class StreamWriter(_Writer, DataSourceStreamArrowWriter):
    """`df.writeStream.format("longboat")`: at-least-once, or exactly-once (module docstring)."""

    streaming = True

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if not self.opts.exactly_once:
            return
        staged = sorted((m for m in messages if isinstance(m, SinkCommit)), key=_by_partition)
        batches = [b for m in staged for b in m.staged]
        ExactlyOncePublisher(self.link, self.opts).publish(batchId, batches)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if not self.opts.exactly_once:
            log.warning(
                "micro-batch %d failed; rows its finished tasks published stay published "
                "(at-least-once: a retry publishes them again)",
                batchId,
            )


def _by_partition(m: SinkCommit) -> int:
    return m.partition


def unique_key(sink_id: str, batch_id: int, topic: str, chunk: int, index: int) -> str:
    """The UNIQ_KEY of the `index`-th message of chunk `chunk` of a micro-batch's sends to
    `topic`: the same whenever the micro-batch is published again."""
    text = f"{sink_id}\0{batch_id}\0{topic}\0{chunk}\0{index}"
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest().upper()


# One send of an exactly-once publish: encoded column-wise, or messages with their keys set.
Send = EncodedChunk | list[Message]


def exactly_once_sends(
    sink_id: str,
    batch_id: int,
    batches: list[pa.RecordBatch],
    opts: WriteOptions,
    max_bytes: int = CHUNK_BYTES,
) -> dict[str, list[Send]]:
    """Each topic's sends of one micro-batch, in the order published: the rows of the topic
    by partition, then row, cut as `chunks` cuts them, each message keyed by `unique_key`.
    Encoded column-wise when every row allows it (`sink_encode`), else message by message;
    either way the same bytes (`tests/spark/test_sink_encode.py`)."""
    column = _column_sends(sink_id, batch_id, batches, opts, max_bytes)
    if column is not None:
        return column
    return _message_sends(sink_id, batch_id, batches, opts, max_bytes)


def _message_sends(
    sink_id: str, batch_id: int, batches: list[pa.RecordBatch], opts: WriteOptions, max_bytes: int
) -> dict[str, list[Send]]:
    by_topic: dict[str, list[Message]] = {}
    for m in _messages(rows_of(batches, opts.topic)):
        by_topic.setdefault(m.topic, []).append(m)
    sends: dict[str, list[Send]] = {}
    for topic, messages in by_topic.items():
        parts = list(chunks(messages, opts.send_batch_size, max_bytes))
        for c, part in enumerate(parts):
            for i, m in enumerate(part):
                m.properties["UNIQ_KEY"] = unique_key(sink_id, batch_id, topic, c, i)
        sends[topic] = list(parts)
    return sends


def _column_sends(
    sink_id: str, batch_id: int, batches: list[pa.RecordBatch], opts: WriteOptions, max_bytes: int
) -> dict[str, list[Send]] | None:
    rows = [b for b in batches if b.num_rows]
    if not rows:
        return {}
    try:
        (batch,) = pa.Table.from_batches(rows).combine_chunks().to_batches()
    except pa.ArrowInvalid:
        return None  # staged batches of different schemas, or a column over 2 GiB in one piece
    topics = row_topics(batch, opts.topic)
    sends: dict[str, list[Send]] = {}
    for topic in topics.unique().to_pylist():

        def keys_of(cuts: list[Cut], topic: str = topic) -> Iterator[str]:
            for c, cut in enumerate(cuts):
                for i in range(cut.end - cut.start):
                    yield unique_key(sink_id, batch_id, topic, c, i)

        encoded = encode_chunks(
            batch.filter(pc.equal(topics, topic)),
            opts.topic,
            max_count=opts.send_batch_size,
            max_body_bytes=max_bytes,
            keys=listed_keys(keys_of),
            uniq_last=False,
        )
        if encoded is None:
            return None
        sends[topic] = list(encoded)
    return sends


class ExactlyOncePublisher:
    """Publishes one micro-batch from the driver so that a replay publishes nothing twice."""

    def __init__(self, bl: BrokerLink, opts: WriteOptions) -> None:
        assert opts.sink_id is not None
        self.link = bl
        self.opts = opts
        self.sink_id = opts.sink_id
        self.group = marker_group(opts.sink_id)
        self.producer = bl.producer(f"{opts.producer_group}-{opts.sink_id}", retry_times=0)

    def publish(self, batch_id: int, batches: list[pa.RecordBatch]) -> None:
        sends = exactly_once_sends(self.sink_id, batch_id, batches, self.opts)
        for topic in sorted(sends):
            self._publish_topic(batch_id, topic, sends[topic])

    def _publish_topic(self, batch_id: int, topic: str, parts: list[Send]) -> None:
        marker_mq = self.link.marker_queue(self.producer, topic)
        marker = self.link.group_offset(self.group, marker_mq)
        if marker is not None and marker > batch_id:
            log.info("batch %d to %s was published before; skipping it", batch_id, topic)
            return
        first = self._first_unpublished(batch_id, topic, len(parts))
        if first:
            log.info("batch %d to %s: %d chunk(s) were published before", batch_id, topic, first)
        for c in range(first, len(parts)):
            self._send_chunk(batch_id, topic, c, parts[c])
        self.link.commit_group(self.group, {marker_mq: batch_id + 1})

    def _stored(self, batch_id: int, topic: str, chunk: int) -> bool:
        key = unique_key(self.sink_id, batch_id, topic, chunk, 0)
        return self.link.has_unique_key(topic, key)

    def _first_unpublished(self, batch_id: int, topic: str, count: int) -> int:
        lo, hi = 0, count
        while lo < hi:
            mid = (lo + hi) // 2
            if self._stored(batch_id, topic, mid):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _send_chunk(self, batch_id: int, topic: str, c: int, part: Send) -> None:
        for attempt in itertools.count(1):
            try:
                if isinstance(part, EncodedChunk):
                    self.link.run(
                        self.producer.send_encoded_batch(part.topic, part.body, part.msg_ids)
                    )
                else:
                    self.link.run(self.producer.send_own_batch(part))
                return
            except TransportError:
                if self._stored(batch_id, topic, c):
                    return
                if attempt >= SEND_ATTEMPTS:
                    raise
