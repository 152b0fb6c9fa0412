"""A message's trace as a timeline: what `longboat message trace` prints.

The records come from the trace topic (queried by the message id, as `mqadmin
QueryMsgTraceById` does); each carries the host of the client that wrote it (the trace
message's born host: the records themselves carry no client address).  The timeline puts
the producer's send first, then the broker's store time (from the message itself, when it
can be read), then each consumer group's delivery attempts: a SubBefore and the SubAfter of
the same request id are one attempt.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from longboat.client.admin import Admin
from longboat.client.errors import ClientError
from longboat.protocol.trace import DEFAULT_TRACE_TOPIC, TraceRecord, TraceType, decode_records


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """A record about the message and the host of the client that wrote it."""

    record: TraceRecord
    client_host: str


@dataclass(frozen=True, slots=True)
class Attempt:
    """One delivery of the message to a consumer group's member."""

    group: str
    client_host: str
    started_ms: int
    retry_times: int
    # None while the consumer has not written its SubAfter (still consuming, or lost).
    cost_ms: int | None
    success: bool | None


@dataclass(slots=True)
class Timeline:
    msg_id: str
    sends: list[TraceEntry] = field(default_factory=list)
    transactions: list[TraceEntry] = field(default_factory=list)
    store_timestamp: int | None = None
    store_host: str | None = None
    # By consumer group, in order of the attempts' start.
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)


def timeline_json(t: Timeline) -> dict[str, object]:
    """The timeline as JSON (`longboat message trace --format json`, the dashboard)."""
    return {
        "msgId": t.msg_id,
        "sends": [
            {
                "group": e.record.group,
                "clientHost": e.client_host,
                "storeHost": e.record.store_host,
                "topic": e.record.topic,
                "time": e.record.timestamp,
                "costMs": e.record.cost_ms,
                "success": e.record.success,
            }
            for e in t.sends
        ],
        "transactions": [
            {
                "group": e.record.group,
                "clientHost": e.client_host,
                "time": e.record.timestamp,
                "state": e.record.transaction_state,
                "fromCheck": e.record.from_transaction_check,
            }
            for e in t.transactions
        ],
        "stored": {"time": t.store_timestamp, "storeHost": t.store_host},
        "deliveries": {
            group: [asdict(a) for a in attempts] for group, attempts in t.attempts.items()
        },
    }


async def trace_entries(
    admin: Admin, msg_id: str, trace_topic: str = DEFAULT_TRACE_TOPIC
) -> list[TraceEntry]:
    """Every record about `msg_id` in `trace_topic`, oldest trace message first."""
    entries = []
    for message in await admin.messages_by_key(trace_topic, msg_id):
        for record in decode_records(message.body.decode("utf-8", "replace")):
            if record.msg_id == msg_id:
                entries.append(TraceEntry(record, message.born_host_str))
    return entries


def timeline_of(msg_id: str, entries: list[TraceEntry]) -> Timeline:
    """The records arranged by who wrote them (see the module docstring)."""
    timeline = Timeline(msg_id)
    before: dict[str | None, TraceEntry] = {}
    after: dict[str | None, TraceEntry] = {}
    for entry in entries:
        kind = entry.record.type
        if kind is TraceType.PUB:
            timeline.sends.append(entry)
        elif kind is TraceType.END_TRANSACTION:
            timeline.transactions.append(entry)
        elif kind is TraceType.SUB_BEFORE:
            before[entry.record.request_id] = entry
        else:
            after[entry.record.request_id] = entry
    for request_id, start in before.items():
        end = after.get(request_id)
        group = start.record.group or "?"
        timeline.attempts.setdefault(group, []).append(
            Attempt(
                group,
                start.client_host,
                start.record.timestamp,
                start.record.retry_times,
                end.record.cost_ms if end else None,
                end.record.success if end else None,
            )
        )
    for attempts in timeline.attempts.values():
        attempts.sort(key=lambda a: (a.started_ms, a.retry_times))
    return timeline


async def message_timeline(
    admin: Admin, msg_id: str, topic: str | None = None, trace_topic: str = DEFAULT_TRACE_TOPIC
) -> Timeline:
    """The timeline of `msg_id`, with the broker's store time when the message is found (in
    `topic`, else in the topic its Pub record names)."""
    timeline = timeline_of(msg_id, await trace_entries(admin, msg_id, trace_topic))
    topic = topic or next((e.record.topic for e in timeline.sends if e.record.topic), None)
    try:
        message = await admin.message_by_id(msg_id, topic)
    except ClientError:
        return timeline
    timeline.store_timestamp = message.store_timestamp
    timeline.store_host = message.store_host_str
    return timeline
