"""ACL over gRPC: RocketMQ 5's `authorization` metadata checked against plain_acl.yml, with
the broker's access control (`longboat.acl.AccessControl.decide`), when ACL is on.

Every call carries `authorization: MQv2-HMAC-SHA1 Credential=<access key>,
SignedHeaders=x-mq-date-time, Signature=<hex HmacSHA1(secret key, x-mq-date-time)>`.  What
each request touches, and with which permission, is RocketMQ 5.1's
`PlainAccessResource.parse(GeneratedMessageV3, ...)`; groups appear as their `%RETRY%` topic,
as in remoting.  A refused call is answered with an in-band status: UNAUTHORIZED when the
account or the signature is wrong, FORBIDDEN when the account lacks a permission.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from longboat.acl import AccessControl
from longboat.acl.plain_acl import ANY, PUB, SUB
from longboat.acl.resources import retry_topic
from longboat.broker.grpc.schema import pb, svc
from longboat.protocol import ProtocolError

SCHEME = "MQv2-HMAC-SHA1"


def credentials(authorization: str) -> tuple[str, str] | None:
    """(access key, signature) of an `authorization` value; None when it does not parse."""
    scheme, _, rest = authorization.partition(" ")
    if scheme != SCHEME:
        return None
    fields: dict[str, str] = {}
    for item in rest.split(","):
        key, eq, value = item.strip().partition("=")
        if eq:
            fields[key] = value
    if "Credential" not in fields or "Signature" not in fields:
        return None
    return fields["Credential"].split("/")[0], fields["Signature"]


def signature(date_time: str, secret_key: str) -> str:
    """The hex HmacSHA1 a RocketMQ 5 client signs `x-mq-date-time` with."""
    return hmac.new(secret_key.encode(), date_time.encode(), hashlib.sha1).hexdigest()


def needed(request: Any) -> dict[str, int]:
    """Resource -> permission the request needs (ProtocolError when it is malformed)."""
    kind = request.DESCRIPTOR.name
    if kind == "HeartbeatRequest":
        if request.client_type in (pb.ClientType.PUSH_CONSUMER, pb.ClientType.SIMPLE_CONSUMER):
            if not request.HasField("group"):
                raise ProtocolError("a consumer's heartbeat has no group")
            return {retry_topic(request.group.name): SUB}
        return {}
    if kind == "SendMessageRequest":
        topics = {m.topic.name for m in request.messages}
        if len(topics) != 1:
            raise ProtocolError("the messages of one send must have one topic")
        return {topics.pop(): PUB}
    if kind == "ReceiveMessageRequest":
        return {
            retry_topic(request.group.name): SUB,
            request.message_queue.topic.name: SUB,
        }
    if kind in (
        "AckMessageRequest",
        "ForwardMessageToDeadLetterQueueRequest",
        "QueryAssignmentRequest",
        "ChangeInvisibleDurationRequest",
    ):
        return {retry_topic(request.group.name): SUB, request.topic.name: SUB}
    if kind in ("EndTransactionRequest", "RecallMessageRequest"):
        return {request.topic.name: PUB}
    if kind == "TelemetryCommand":
        if not request.HasField("settings"):
            return {}
        settings = request.settings
        if not settings.HasField("publishing") and not settings.HasField("subscription"):
            raise ProtocolError("the settings have neither publishing nor subscription")
        touched = {topic.name: PUB for topic in settings.publishing.topics}
        if settings.HasField("subscription"):
            touched[retry_topic(settings.subscription.group.name)] = SUB
            for entry in settings.subscription.subscriptions:
                touched[entry.topic.name] = SUB
        return touched
    if kind == "NotifyClientTerminationRequest":
        return {retry_topic(request.group.name): SUB} if request.HasField("group") else {}
    if kind == "QueryRouteRequest":
        return {request.topic.name: ANY}
    return {}


class GrpcAccess:
    """The ACL decision for one gRPC request."""

    def __init__(self, access: AccessControl) -> None:
        self.access = access

    def refusal(self, request: Any, context: Any) -> Any:
        """The `Status` refusing the request, None when it may go on."""
        metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
        parsed = credentials(metadata.get("authorization", ""))
        access_key, sent = parsed if parsed is not None else (None, "")
        date_time = metadata.get("x-mq-date-time", "")
        refused = self.access.decide(
            _peer_host(context.peer() or ""),
            access_key,
            lambda secret_key: hmac.compare_digest(
                sent.encode(), signature(date_time, secret_key).encode()
            ),
            lambda: needed(request),
        )
        if refused is None:
            return None
        code = pb.Code.FORBIDDEN if refused.authenticated else pb.Code.UNAUTHORIZED
        return pb.Status(code=code, message=f"{refused.reason} ({self.access.path.name})")


def _peer_host(peer: str) -> str:
    """The host of a gRPC peer string (`ipv4:127.0.0.1:5000`, `ipv6:[::1]:5000`)."""
    address = peer.split(":", 1)[1] if ":" in peer else peer
    host = address.rsplit(":", 1)[0]
    return host.strip("[]")


class AclInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Checks every unary request and every receive before its handler runs; the Telemetry
    stream checks its commands itself (`GrpcAccess.refusal`)."""

    def __init__(self, access: GrpcAccess) -> None:
        self.access = access

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: Any
    ) -> Any:
        handler = await continuation(details)
        if handler is None:
            return None
        response_type = getattr(svc, details.method.rsplit("/", 1)[-1] + "Response", None)
        if response_type is None:
            return handler
        access = self.access
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def checked_unary(request: Any, context: Any) -> Any:
                refused = access.refusal(request, context)
                if refused is not None:
                    return response_type(status=refused)
                return await unary(request, context)

            return grpc.unary_unary_rpc_method_handler(
                checked_unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            stream = handler.unary_stream

            async def checked_stream(request: Any, context: Any) -> AsyncIterator[Any]:
                refused = access.refusal(request, context)
                if refused is not None:
                    yield response_type(status=refused)
                    return
                async for response in stream(request, context):
                    yield response

            return grpc.unary_stream_rpc_method_handler(
                checked_stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler
