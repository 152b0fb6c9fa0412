"""The dashboard's web application: a JSON API under /api and the page that reads it.

aiohttp serves it: an asyncio server and router in one well-kept package, running on the same
event loop as the admin client (and, in `longboat up`, as the broker), with no second server
library.  The page is static HTML, CSS and JavaScript shipped in the package (no CDN: this
runs offline) and polls the API every few seconds for live figures.

Errors come back as `{"error": text}`: 400 for bad input, 404 when nothing was found, 409 when
a reset is refused because the group has live members (as the CLI refuses it), or when fewer
read queues would hide unconsumed messages and the change did not say `shrink`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from longboat.client.admin import Admin, ResetTarget
from longboat.client.errors import (
    BrokerError,
    ClientError,
    ClientUsageError,
    GroupOnlineError,
    MessageNotFoundError,
    NoRouteError,
    QueuesHoldMessagesError,
)
from longboat.client.message import Message
from longboat.client.producer import Producer
from longboat.client.resend import resend_to_group
from longboat.client.tracing.timeline import message_timeline, timeline_json
from longboat.dashboard import views
from longboat.dashboard.replication import replication_view
from longboat.dashboard.sampler import LagSampler
from longboat.dashboard.sessions import COOKIE, Clients, Sessions
from longboat.protocol import ResponseCode
from longboat.protocol.trace import DEFAULT_TRACE_TOPIC
from longboat.protocol.types import PERM_READ, PERM_WRITE

STATIC = Path(__file__).parent / "static"
CLIENTS: web.AppKey[Clients] = web.AppKey("clients", Clients)
SESSIONS: web.AppKey[Sessions] = web.AppKey("sessions", Sessions)
SAMPLER: web.AppKey[LagSampler] = web.AppKey("sampler", LagSampler)
PERMS = {"rw": PERM_READ | PERM_WRITE, "r": PERM_READ, "w": PERM_WRITE}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error(status: int, text: str) -> web.Response:
    return web.json_response({"error": text}, status=status)


@web.middleware
async def client_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The admin client's errors as JSON the page shows next to what was tried."""
    try:
        return await handler(request)
    except BrokerError as exc:
        if exc.code != ResponseCode.NO_PERMISSION:
            return error(502, str(exc))
        # ACL refused: the page asks for an access key and secret key.
        return web.json_response({"error": str(exc), "signIn": True}, status=401)
    except GroupOnlineError as exc:
        return error(409, str(exc))
    except QueuesHoldMessagesError as exc:
        # The page asks the user, and sends the change again with "shrink": true.
        return web.json_response({"error": str(exc), "confirmShrink": True}, status=409)
    except (MessageNotFoundError, NoRouteError) as exc:
        return error(404, str(exc))
    except (ClientUsageError, ValueError, KeyError) as exc:
        return error(400, str(exc))
    except ClientError as exc:
        return error(502, str(exc))


def make_app(clients: Clients, sessions: Sessions, sampler: LagSampler) -> web.Application:
    app = web.Application(middlewares=[client_errors])
    app[CLIENTS] = clients
    app[SESSIONS] = sessions
    app[SAMPLER] = sampler
    app.router.add_get("/", index)
    app.router.add_get("/favicon.ico", favicon)
    app.router.add_static("/static", STATIC)
    api = [
        web.get("/api/cluster", get_cluster),
        web.get("/api/replication", get_replication),
        web.get("/api/topics", get_topics),
        web.post("/api/topics", post_topic),
        web.get("/api/topics/{topic}", get_topic),
        web.delete("/api/topics/{topic}", delete_topic),
        web.post("/api/topics/{topic}/send", post_send),
        web.get("/api/groups", get_groups),
        web.get("/api/groups/{group}", get_group),
        web.post("/api/groups/{group}/reset", post_reset),
        web.get("/api/groups/{group}/dlq", get_dlq),
        web.get("/api/messages", get_messages),
        web.post("/api/messages/resend", post_resend),
        web.get("/api/messages/trace", get_trace),
        web.get("/api/session", get_session),
        web.post("/api/session", post_session),
        web.delete("/api/session", delete_session),
    ]
    app.router.add_routes(api)
    return app


def clients_of(request: web.Request) -> Clients:
    """The signed-in browser's clients, else the dashboard's own."""
    signed_in = request.app[SESSIONS].get(request.cookies.get(COOKIE))
    return signed_in or request.app[CLIENTS]


def admin_of(request: web.Request) -> Admin:
    return clients_of(request).admin


def producer_of(request: web.Request) -> Producer:
    return clients_of(request).producer


async def get_session(request: web.Request) -> web.Response:
    return web.json_response({"accessKey": clients_of(request).access_key})


async def post_session(request: web.Request) -> web.Response:
    """Sign in: {accessKey, secretKey}; later requests of this browser are signed with them."""
    data = await body_of(request)
    access_key, secret_key = str(data.get("accessKey", "")), str(data.get("secretKey", ""))
    if not access_key or not secret_key:
        raise ClientUsageError("give both the access key and the secret key")
    sessions = request.app[SESSIONS]
    await sessions.sign_out(request.cookies.get(COOKIE))
    token = await sessions.sign_in(access_key, secret_key)
    response = web.json_response({"accessKey": access_key})
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
    return response


async def delete_session(request: web.Request) -> web.Response:
    await request.app[SESSIONS].sign_out(request.cookies.get(COOKIE))
    response = web.json_response({"accessKey": request.app[CLIENTS].access_key})
    response.del_cookie(COOKIE)
    return response


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


async def favicon(request: web.Request) -> web.FileResponse:
    """Browsers ask for /favicon.ico whatever the page links: an SVG, which they all take."""
    return web.FileResponse(STATIC / "favicon.svg", headers={"Content-Type": "image/svg+xml"})


async def body_of(request: web.Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ValueError:
        raise ClientUsageError("the request body must be a JSON object") from None
    if not isinstance(data, dict):
        raise ClientUsageError("the request body must be a JSON object")
    return data


async def get_cluster(request: web.Request) -> web.Response:
    return web.json_response(await views.cluster_view(admin_of(request)))


async def get_replication(request: web.Request) -> web.Response:
    sampler = request.app[SAMPLER]
    view = await replication_view(admin_of(request), sampler.log_end_histories(), sampler.clock())
    return web.json_response(view)


async def get_topics(request: web.Request) -> web.Response:
    rates = request.app[SAMPLER].topic_rates()
    return web.json_response(await views.topics_view(admin_of(request), rates))


async def get_topic(request: web.Request) -> web.Response:
    return web.json_response(await views.topic_view(admin_of(request), request.match_info["topic"]))


async def post_topic(request: web.Request) -> web.Response:
    """Create a topic, or change one that exists: {name, queues, perm: rw|r|w, order, shrink}."""
    data = await body_of(request)
    name, queues = str(data["name"]), int(data.get("queues", 8))
    perm = PERMS.get(str(data.get("perm", "rw")))
    if perm is None or queues < 1:
        raise ClientUsageError("perm must be rw, r or w and queues at least 1")
    admin = admin_of(request)
    existing = name in await admin.topics()
    if existing:
        brokers = await admin.update_topic(
            name,
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=perm,
            order=bool(data.get("order")),
            shrink=bool(data.get("shrink")),
        )
    else:
        brokers = await admin.create_topic(
            name, queue_nums=queues, perm=perm, order=bool(data.get("order"))
        )
    return web.json_response({"topic": name, "brokers": brokers, "updated": existing})


async def delete_topic(request: web.Request) -> web.Response:
    topic = request.match_info["topic"]
    brokers = await admin_of(request).delete_topic(topic)
    return web.json_response({"topic": topic, "brokers": brokers})


async def post_send(request: web.Request) -> web.Response:
    """Send a test message: {body, tags, keys}."""
    data = await body_of(request)
    msg = Message(
        topic=request.match_info["topic"],
        body=str(data.get("body", "")).encode(),
        tags=data.get("tags") or None,
        keys=data.get("keys") or None,
    )
    result = await producer_of(request).send(msg)
    return web.json_response(
        {
            "status": result.status.name,
            "msgId": result.msg_id,
            "offsetMsgId": result.offset_msg_id,
            "queue": result.message_queue.queue_id,
            "broker": result.message_queue.broker_name,
            "queueOffset": result.queue_offset,
        }
    )


async def get_groups(request: web.Request) -> web.Response:
    rates = request.app[SAMPLER].consume_rates()
    return web.json_response(await views.groups_view(admin_of(request), rates))


async def get_group(request: web.Request) -> web.Response:
    group = request.match_info["group"]
    view = await views.group_view(admin_of(request), group)
    view["history"] = request.app[SAMPLER].series(group)
    return web.json_response(view)


async def post_reset(request: web.Request) -> web.Response:
    """Move the group's offsets: {to: earliest|latest|ISO time|epoch ms, topic?, force?}.
    Refused (409) while members run, unless force: the rule of `longboat group reset`."""
    group = request.match_info["group"]
    data = await body_of(request)
    target = reset_target(str(data.get("to", "")))
    admin = admin_of(request)
    topic = data.get("topic") or None
    topics = [topic] if topic else await admin.consumed_topics(group)
    if not topics:
        raise ClientUsageError(f"group {group} has no committed offsets; name the topic")
    moved: list[dict[str, Any]] = []
    for t in topics:
        result = await admin.reset_offsets(group, t, target, force=bool(data.get("force")))
        moved += [
            {"topic": mq.topic, "broker": mq.broker_name, "queue": mq.queue_id, "offset": o}
            for mq, o in sorted(result.items())
        ]
    return web.json_response({"group": group, "moved": moved})


def reset_target(text: str) -> ResetTarget:
    if text in ("earliest", "latest"):
        return text  # type: ignore[return-value]
    if text.isdigit():
        return int(text)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ClientUsageError(
            f"reset target must be earliest, latest or a time, not {text!r}"
        ) from None


async def get_dlq(request: web.Request) -> web.Response:
    found = await views.dlq_messages(admin_of(request), request.match_info["group"])
    return web.json_response({"messages": [views.message_json(m) for m in found]})


async def get_messages(request: web.Request) -> web.Response:
    """?id=...[&topic=...] one message with its delivery state; ?key=...&topic=...; or
    ?topic=...&begin=...&end=... (epoch ms; default the last hour)."""
    admin, q = admin_of(request), request.query
    topic = q.get("topic") or None
    if q.get("id"):
        msg = await admin.message_by_id(q["id"].strip(), topic)
        record = views.message_json(msg)
        record["delivery"] = await views.delivery_states(admin, msg)
        return web.json_response({"messages": [record]})
    if topic is None:
        raise ClientUsageError("give a message id, or a topic with a key or a time range")
    if q.get("key"):
        found = await admin.messages_by_key(topic, q["key"].strip())
    else:
        now = int(time.time() * 1000)
        begin = int(q.get("begin") or now - 3_600_000)
        end = int(q.get("end") or now)
        found = await views.messages_in_range(admin, topic, begin, end)
    return web.json_response({"messages": [views.message_json(m) for m in found]})


async def get_trace(request: web.Request) -> web.Response:
    """?id=...[&topic=...][&traceTopic=...]: the message's trace as a timeline (what clients
    that write traces recorded; empty lists when none did)."""
    q = request.query
    trace_topic = q.get("traceTopic") or DEFAULT_TRACE_TOPIC
    timeline = await message_timeline(
        admin_of(request), q["id"].strip(), q.get("topic") or None, trace_topic
    )
    return web.json_response(timeline_json(timeline))


async def post_resend(request: web.Request) -> web.Response:
    """Deliver a stored message again to one group: {offsetMsgId, group}."""
    data = await body_of(request)
    admin = admin_of(request)
    msg = await admin.message_by_id(str(data["offsetMsgId"]))
    group = str(data["group"])
    result = await resend_to_group(producer_of(request), msg, group)
    return web.json_response(
        {"group": group, "msgId": result.msg_id, "topic": result.message_queue.topic}
    )
