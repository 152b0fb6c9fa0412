"""JSON-ready shapes of what `Admin` reads, one shape per thing.

The dashboard's API and the CLI's `--format json` both answer with these, so a script reading
either sees the same fields under the same names.
"""

from __future__ import annotations

from typing import Any

from longboat.client.admin import QueueProgress, QueueStatus, is_retry_queue, known_lag
from longboat.protocol.bodies import ConsumerConnection, TopicRouteData
from longboat.protocol.codes import version_name
from longboat.protocol.types import PERM_READ, PERM_WRITE

Json = dict[str, Any]


def perm_text(perm: int) -> str:
    return ("r" if perm & PERM_READ else "-") + ("w" if perm & PERM_WRITE else "-")


def route_json(route: TopicRouteData) -> Json:
    return {
        "queues": [
            {
                "broker": q.broker_name,
                "read": q.read_queue_nums,
                "write": q.write_queue_nums,
                "perm": perm_text(q.perm),
            }
            for q in sorted(route.queue_datas, key=lambda q: q.broker_name)
        ],
        "brokers": [
            {"broker": b.broker_name, "addrs": {str(k): v for k, v in b.broker_addrs.items()}}
            for b in sorted(route.broker_datas, key=lambda b: b.broker_name)
        ],
    }


def route_totals_json(route: TopicRouteData) -> Json:
    """A topic's line in a listing: its brokers, queues summed over them, permissions."""
    qds = route.queue_datas
    return {
        "brokers": sorted(q.broker_name for q in qds),
        "writeQueues": sum(q.write_queue_nums for q in qds),
        "readQueues": sum(q.read_queue_nums for q in qds),
        "perm": "/".join(sorted({perm_text(q.perm) for q in qds})),
    }


def topic_json(topic: str, route: TopicRouteData, status: list[QueueStatus]) -> Json:
    return {
        "topic": topic,
        "route": route_json(route),
        "queues": [
            {
                "broker": s.mq.broker_name,
                "queue": s.mq.queue_id,
                "min": s.min_offset,
                "max": s.max_offset,
                "messages": s.messages,
            }
            for s in status
        ],
    }


def connection_json(connection: ConsumerConnection) -> Json:
    return {
        "members": [
            {
                "clientId": c.client_id,
                "addr": c.client_addr,
                "language": c.language,
                "version": version_name(c.version),
            }
            for c in connection.connections
        ],
        "subscriptions": [
            {"topic": t, "expression": s.sub_string}
            for t, s in sorted(connection.subscriptions.items())
        ],
        "messageModel": connection.message_model,
        "consumeType": connection.consume_type,
    }


def progress_json(p: QueueProgress) -> Json:
    """One queue's progress; `consumerOffset` and `lag` are null where the group stored no
    offset, `lastTimestamp` where it consumed nothing (or the message is gone), `lagTime`
    where nothing waits."""
    return {
        "topic": p.mq.topic,
        "broker": p.mq.broker_name,
        "queue": p.mq.queue_id,
        "brokerOffset": p.broker_offset,
        "consumerOffset": p.consumer_offset,
        "lag": p.lag,
        # Milliseconds are all the broker's timestamps hold.
        "lagTime": None if p.lag_time is None else round(p.lag_time, 3),
        "lastTimestamp": p.last_timestamp or None,
        "retry": is_retry_queue(p.mq),
    }


def group_json(group: str, connection: ConsumerConnection, progress: list[QueueProgress]) -> Json:
    return {
        "group": group,
        **connection_json(connection),
        "progress": [progress_json(p) for p in progress],
        "lag": known_lag(progress),
    }
