"""What each dashboard page shows, read through the admin client and shaped as JSON-ready dicts.

Everything here asks the cluster through `Admin` (and a `Producer` for sends and resends), the
same code the CLI uses, so the dashboard works against any RocketMQ 4.x name server and broker.
"""

from __future__ import annotations

import asyncio
import base64

from longboat.client.admin import Admin, is_retry_queue, known_lag
from longboat.client.errors import ClientError
from longboat.client.message import MessageExt, MessageQueue
from longboat.client.resend import original_topic
from longboat.dashboard.admin_json import Json, group_json, route_totals_json, topic_json
from longboat.protocol.topic_names import DLQ_GROUP_TOPIC_PREFIX, topic_kind
from longboat.protocol.types import MASTER_ID

# At most this many messages in one listing (a time range, a DLQ).
MAX_LISTED = 200


async def cluster_view(admin: Admin) -> Json:
    info = await admin.cluster_info()
    reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
    rows: list[Json] = [
        {
            "cluster": cluster_name,
            "broker": name,
            "id": broker_id,
            "role": "master" if broker_id == MASTER_ID else "slave",
            "addr": addr,
        }
        for cluster_name, name, broker_id, addr in info.members()
    ]

    async def figures(row: Json) -> None:
        try:
            configs, runtime = await asyncio.gather(
                admin.broker_topics(row["addr"]), admin.broker_runtime(row["addr"])
            )
        except ClientError as exc:
            row["topics"] = None
            row["error"] = f"unreachable: {exc}"
            return
        row["topics"] = sum(1 for t in configs if topic_kind(t, reserved) == "normal")
        row.update(runtime_json(runtime))

    await asyncio.gather(*(figures(r) for r in rows))
    return {"brokers": rows}


def runtime_json(runtime: dict[str, str]) -> Json:
    """The runtime figures the Cluster page shows: RocketMQ's `putTps` and
    `getTransferedTps` hold rates over 10 s, 60 s and 600 s; the first is shown, to two
    decimals as RocketMQ 4 writes them (RocketMQ 5 writes every digit of a double, and
    spells the second `getTransferredTps`)."""

    def first_rate(text: str) -> float | None:
        parts = text.split()
        try:
            return round(float(parts[0]), 2) if parts else None
        except ValueError:
            return None

    ratio = runtime.get("commitLogDiskRatio")
    gets = runtime.get("getTransferedTps", runtime.get("getTransferredTps", ""))
    return {
        "version": runtime.get("brokerVersionDesc"),
        "putTps": first_rate(runtime.get("putTps", "")),
        "getTps": first_rate(gets),
        "diskRatio": float(ratio) if ratio else None,
        "diskCapacity": runtime.get("commitLogDirCapacity"),
        "putToday": runtime.get("msgPutTotalTodayNow"),
    }


async def topics_view(admin: Admin, rates: dict[str, dict[str, float]] | None = None) -> Json:
    """Every topic with its kind and, as `longboat topic list`, its brokers, queues and
    permission (null when no broker serves it any more), and its in and out rates (messages
    per second, from the sampler; null until sampled twice)."""
    rates = rates or {}
    info, topics = await asyncio.gather(admin.cluster_info(), admin.topics())
    reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
    routes = await asyncio.gather(*(admin.route_or_none(t) for t in topics))
    return {
        "topics": [
            {
                "name": t,
                "kind": topic_kind(t, reserved),
                "route": r and route_totals_json(r),
                "rates": rates.get(t),
            }
            for t, r in zip(topics, routes, strict=True)
        ]
    }


async def topic_view(admin: Admin, topic: str) -> Json:
    route, status = await asyncio.gather(admin.route(topic), admin.topic_status(topic))
    return topic_json(topic, route, status)


async def groups_view(admin: Admin, rates: dict[str, float] | None = None) -> Json:
    """Every group's row; `rate`, its consume rate from the sampler (null until sampled
    twice)."""
    names = await admin.groups()
    rows = await asyncio.gather(*(group_row(admin, g) for g in names))
    for row in rows:
        row["rate"] = (rates or {}).get(row["name"])
    return {"groups": rows}


async def group_row(admin: Admin, group: str) -> Json:
    members, progress = await asyncio.gather(admin.consumer_ids(group), admin.group_progress(group))
    lag = known_lag(progress)
    waited = max(
        (p.lag_time for p in progress if p.lag_time is not None and not is_retry_queue(p.mq)),
        default=None,
    )
    return {
        "name": group,
        "members": len(members),
        "lag": lag,
        "state": group_state(len(members), lag, waited),
    }


# Members commit their offsets every few seconds (RocketMQ's default: 5 s), so a group that
# keeps up still shows the messages since its last commit as lag: it is lagging only once a
# message has waited longer than a commit or two.
LAGGING_AFTER_S = 10.0


def group_state(members: int, lag: int | None, waited: float | None) -> str:
    """What the Groups page says of a group: its lag, and how long its oldest unconsumed
    message has waited (seconds)."""
    if lag is None:
        return "no offsets"
    if not members:
        return "offline" if lag else "idle"
    return "lagging" if lag and (waited or 0) > LAGGING_AFTER_S else "running"


async def group_view(admin: Admin, group: str) -> Json:
    connection, progress = await asyncio.gather(
        admin.group_connections(group), admin.group_progress(group)
    )
    return group_json(group, connection, progress)


def message_json(msg: MessageExt) -> Json:
    """A message for the browser: the body as base64 (the page shows it as text, pretty JSON
    or hex)."""
    return {
        **msg.header_fields(),
        "originalTopic": original_topic(msg),
        "properties": dict(sorted(msg.properties.items())),
        "body": base64.b64encode(msg.body).decode("ascii"),
        "bodySize": len(msg.body),
    }


async def delivery_states(admin: Admin, msg: MessageExt) -> list[Json]:
    """Per group consuming the message's queue: consumed (its offset is past the message) or
    not.  A group is found by its committed offsets on that queue."""
    names = await admin.groups()
    progress = await asyncio.gather(
        *(admin.group_progress(g, msg.topic, with_lag_time=False) for g in names),
        return_exceptions=True,
    )
    states: list[Json] = []
    for name, rows in zip(names, progress, strict=True):
        if isinstance(rows, BaseException):
            continue
        for p in rows:
            if p.consumer_offset is None:
                continue  # the group never read this queue: nothing to say of its delivery
            if p.mq.topic == msg.topic and p.mq.queue_id == msg.queue_id:
                states.append(
                    {
                        "group": name,
                        "broker": p.mq.broker_name,
                        "consumerOffset": p.consumer_offset,
                        "consumed": p.consumer_offset > msg.queue_offset,
                    }
                )
    return states


async def messages_in_range(
    admin: Admin, topic: str, begin_ms: int, end_ms: int, limit: int = MAX_LISTED
) -> list[MessageExt]:
    """Messages of `topic` stored between the two times, every queue, oldest first."""
    api = admin.instance.api
    route = await admin.instance.route(topic, refresh=True)

    async def queue(mq: MessageQueue) -> list[MessageExt]:
        addr = await admin.instance.find_master_addr(mq.broker_name, topic)
        offset = await api.search_offset(addr, mq, begin_ms)
        high = await api.get_max_offset(addr, mq)
        found: list[MessageExt] = []
        while offset < high and len(found) < limit:
            batch = await api.peek(addr, mq, offset, min(32, high - offset))
            if not batch:
                break
            for m in batch:
                if m.store_timestamp > end_ms:
                    return found
                if m.store_timestamp >= begin_ms:
                    found.append(m)
            offset = batch[-1].queue_offset + 1
        return found

    batches = await asyncio.gather(*(queue(mq) for mq in sorted(route.subscribe_queues)))
    merged = sorted((m for b in batches for m in b), key=lambda m: m.store_timestamp)
    return merged[:limit]


async def dlq_messages(admin: Admin, group: str, limit: int = MAX_LISTED) -> list[MessageExt]:
    """What `%DLQ%group` holds, oldest first; none when the group never dead-lettered."""
    topic = f"{DLQ_GROUP_TOPIC_PREFIX}{group}"
    if topic not in await admin.topics():
        return []
    return await messages_in_range(admin, topic, 0, 2**62, limit)
