"""Pulled records straight into Arrow columns, and Arrow rows back into messages to send.

Spark accepts a `pyarrow.RecordBatch` from `read()` only if its schema is exactly the one it
derives from the data source schema (nullable fields, `timestamp[us, tz=UTC]`, a map whose
keys are non-null), so the Arrow schema is derived here from the Spark schema by Spark's own
function, once, and every batch is built against it.  Yielding Arrow instead of tuples skips
Spark's per-value conversion, which costs several times more than the decoding itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop

SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("broker", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("queue_offset", LongType()),
        StructField("msg_id", StringType()),
        StructField("keys", StringType()),
        StructField("tags", StringType()),
        StructField("body", BinaryType()),
        StructField("born_timestamp", TimestampType()),
        StructField("store_timestamp", TimestampType()),
        StructField("reconsume_times", IntegerType()),
        StructField("properties", MapType(StringType(), StringType())),
    ]
)

# Properties the schema already shows as columns, or that the client adds on the way in.
HIDDEN_PROPERTIES = frozenset(
    {Prop.TAGS, Prop.KEYS, Prop.UNIQ_KEY, Prop.MIN_OFFSET, Prop.MAX_OFFSET}
)


@cache
def arrow_schema() -> pa.Schema:
    return to_arrow_schema(SCHEMA, timezone="UTC")


def _ms_to_timestamps(values: list[int]) -> pa.Array:
    micros = pa.array(values, pa.int64()).to_numpy(zero_copy_only=True) * 1000
    return pa.array(micros, pa.timestamp("us", tz="UTC"))


def messages_to_batch(messages: list[MessageExt], broker: str) -> pa.RecordBatch:
    """One record batch of `messages`, all from `broker`, in the source schema."""
    schema = arrow_schema()
    n = len(messages)
    map_offsets = [0]
    map_keys: list[str] = []
    map_values: list[str] = []
    msg_ids: list[str] = []
    keys: list[str | None] = []
    tags: list[str | None] = []
    for m in messages:
        props = m.properties
        msg_ids.append(props.get(Prop.UNIQ_KEY) or m.offset_msg_id)
        keys.append(props.get(Prop.KEYS))
        tags.append(props.get(Prop.TAGS))
        for k, v in props.items():
            if k not in HIDDEN_PROPERTIES:
                map_keys.append(k)
                map_values.append(v)
        map_offsets.append(len(map_keys))
    properties = pa.MapArray.from_arrays(
        pa.array(map_offsets, pa.int32()),
        pa.array(map_keys, pa.string()),
        pa.array(map_values, pa.string()),
        type=schema.field("properties").type,
    )
    columns = [
        pa.array([m.topic for m in messages], pa.string()),
        pa.repeat(pa.scalar(broker, pa.string()), n) if n else pa.array([], pa.string()),
        pa.array([m.queue_id for m in messages], pa.int32()),
        pa.array([m.queue_offset for m in messages], pa.int64()),
        pa.array(msg_ids, pa.string()),
        pa.array(keys, pa.string()),
        pa.array(tags, pa.string()),
        pa.array([m.body for m in messages], pa.binary()),
        _ms_to_timestamps([m.born_timestamp for m in messages]),
        _ms_to_timestamps([m.store_timestamp for m in messages]),
        pa.array([m.reconsume_times for m in messages], pa.int32()),
        properties,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# ---------------------------------------------------------------------------- the sink side


@dataclass(frozen=True, slots=True)
class OutgoingRow:
    """One message to publish, as read from a sink row."""

    topic: str
    body: bytes
    tags: str | None
    keys: str | None
    properties: dict[str, str] | None


class SinkSchemaError(ValueError):
    """The DataFrame given to the sink lacks a usable column (the caller's mistake)."""


SINK_COLUMNS = ("topic", "body", "tags", "keys", "properties")


def check_sink_schema(schema: StructType, default_topic: str | None) -> None:
    """Fail before any task runs when the DataFrame cannot be published."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "body" not in fields:
        raise SinkSchemaError("the longboat sink needs a 'body' column (binary or string)")
    if not isinstance(fields["body"], BinaryType | StringType):
        raise SinkSchemaError(f"column 'body' must be binary or string, not {fields['body']}")
    for name in ("topic", "tags", "keys"):
        if name in fields and not isinstance(fields[name], StringType):
            raise SinkSchemaError(f"column '{name}' must be a string, not {fields[name]}")
    if "properties" in fields and fields["properties"] != MapType(StringType(), StringType()):
        raise SinkSchemaError("column 'properties' must be map<string,string>")
    if "topic" not in fields and default_topic is None:
        raise SinkSchemaError("give a 'topic' column or the 'topic' option")


def rows_of(batches: Iterable[pa.RecordBatch], default_topic: str | None) -> Iterator[OutgoingRow]:
    """The messages in Arrow batches handed to a sink; extra columns are ignored."""
    for batch in batches:
        names = batch.schema.names
        n = batch.num_rows
        none = [None] * n
        col = {
            name: batch.column(names.index(name)).to_pylist()
            for name in SINK_COLUMNS
            if name in names
        }
        topics = col.get("topic") or [default_topic] * n
        bodies = col["body"]
        tags = col.get("tags") or none
        keys = col.get("keys") or none
        props = col.get("properties") or none
        for i in range(n):
            body = bodies[i]
            if body is None:
                raise SinkSchemaError(f"row {i} of a sink batch has a null body")
            topic = topics[i] or default_topic
            if topic is None:
                raise SinkSchemaError(f"row {i} of a sink batch has no topic")
            p = props[i]
            yield OutgoingRow(
                topic=topic,
                body=body.encode() if isinstance(body, str) else bytes(body),
                tags=tags[i],
                keys=keys[i],
                properties=dict(p) if p else None,
            )
