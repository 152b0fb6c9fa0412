"""`apache.rocketmq.v2.MessagingService` over the broker's store: the RPCs RocketMQ 5 clients
call, answered the way RocketMQ's proxy answers them.

Each RPC decodes its request, calls the core (`longboat.broker.core`: admission, the append
and its durability, pop, transactions) and encodes what comes back; the send policy is the
core's, shared with remoting, and a core `Refusal` becomes its v2 status through the one table
of `status.py`.  What is the adapter's own: v2 validation (message types, invisible times,
group names, receipt handles), the v2 message codec (`messages.py`), Telemetry sessions and
the parked receives.  Every answer carries an in-band `Status`; bad input gets its v2 code and
a message that says whose fault it is, and the endpoint keeps serving.

Handlers run on the broker's event loop (grpc.aio shares it), so a send appends in-line like
a remoting send, and pop-table transitions need no lock.
"""

from __future__ import annotations

import asyncio
import logging
import random
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from longboat.broker.core.append import outcome
from longboat.broker.core.message_filter import SQL92, message_filter
from longboat.broker.core.pop import PopRequest, PopService
from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.core.timers import TIMER_TOPIC, recall_handle_for
from longboat.broker.core.transactions import TransactionService
from longboat.broker.grpc.messages import BadMessage, to_inner, to_v2
from longboat.broker.grpc.schema import pb, svc, svc_grpc
from longboat.broker.grpc.settings import LONG_POLLING_TIMEOUT_S, RECEIVE_BATCH_SIZE, settings_reply
from longboat.broker.grpc.status import V2_CODES, refused, status
from longboat.filter.sql92 import Sql92Filter
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import PERM_READ, PERM_WRITE
from longboat.store import PutStatus

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost
    from longboat.broker.grpc.auth import GrpcAccess

log = logging.getLogger(__name__)

Code = pb.Code
# What a push consumer (no invisible_duration in its receive) gets: RocketMQ proxy's default.
DEFAULT_INVISIBLE_MS = 60_000
# Answer a long poll this long before the client's deadline (RocketMQ proxy's reserve).
LONG_POLLING_RESERVE_S = 0.1
ACCEPTED_TYPES = (
    pb.MessageType.NORMAL,
    pb.MessageType.FIFO,
    pb.MessageType.DELAY,
    pb.MessageType.TRANSACTION,
)


class TelemetrySession:
    """One client's open Telemetry stream: its settings and the commands waiting to go."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.settings: Any = None
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()

    def send(self, command: Any) -> None:
        self.outbox.put_nowait(command)

    def close(self) -> None:
        """End the stream (the client went away or said goodbye)."""
        self.outbox.put_nowait(None)

    def publishes(self, topic: str) -> bool:
        settings = self.settings
        return (
            settings is not None
            and settings.HasField("publishing")
            and any(t.name == topic for t in settings.publishing.topics)
        )


def _metadata(context: Any, key: str) -> str:
    for k, v in context.invocation_metadata() or ():
        if k == key:
            return str(v)
    return ""


@dataclass(eq=False)
class MessagingService(svc_grpc.MessagingServiceServicer):  # type: ignore[misc]
    controller: CoreHost
    pop: PopService
    transactions: TransactionService
    port: int
    access: GrpcAccess | None = None
    # client id -> its open Telemetry stream
    sessions: dict[str, TelemetrySession] = field(default_factory=dict, init=False)

    # ------------------------------------------------------------------ checks

    def _topic(self, resource: Any, perm: int) -> TopicConfig:
        return self.controller.admission.known_topic(resource.name, perm)

    def _group(self, resource: Any) -> str:
        name = resource.name
        if not name or not name.strip():
            raise Refusal(Reason.ILLEGAL_GROUP, "the consumer group name is blank")
        ctl = self.controller
        if (
            not ctl.config.auto_create_subscription_group
            and name not in ctl.subscription_groups.all()
        ):
            raise Refusal(
                Reason.GROUP_NOT_FOUND,
                f"consumer group {name!r} does not exist and autoCreateSubscriptionGroup is off",
            )
        return str(name)

    def _invisible_ms(self, duration: Any, *, receive: bool) -> int:
        cfg = self.controller.config
        ms = int(duration.ToMilliseconds())
        low = cfg.grpc_min_invisible_time_mills if receive else 0
        high = cfg.grpc_max_invisible_time_mills
        if not low <= ms <= high:
            raise Refusal(
                Reason.ILLEGAL_INVISIBLE_TIME,
                f"the invisible time {ms} ms is out of range [{low}, {high}] ms",
            )
        return ms

    # ------------------------------------------------------------------ route

    def _endpoints(self, asked: Any) -> Any:
        """Where clients reach this broker: the address the client dialled, which it can
        evidently reach, else the advertised one."""
        if asked is not None and asked.addresses and asked.scheme:
            return asked
        return pb.Endpoints(
            scheme=pb.AddressScheme.IPv4,
            addresses=[pb.Address(host=self.controller.config.advertised_ip, port=self.port)],
        )

    def _queue(self, topic: Any, queue_id: int, perm: int, endpoints: Any) -> Any:
        return pb.MessageQueue(
            topic=topic,
            id=queue_id,
            permission=perm,
            broker=pb.Broker(name=self.controller.config.broker_name, id=0, endpoints=endpoints),
            accept_message_types=ACCEPTED_TYPES,
        )

    async def QueryRoute(self, request: Any, context: Any) -> Any:
        try:
            config = self._topic(request.topic, PERM_READ | PERM_WRITE)
        except Refusal as refusal:
            return svc.QueryRouteResponse(status=refused(refusal))
        endpoints = self._endpoints(request.endpoints if request.HasField("endpoints") else None)
        queues = []
        for queue_id in range(max(config.read_queue_nums, config.write_queue_nums)):
            readable = queue_id < config.read_queue_nums and config.perm & PERM_READ
            writable = queue_id < config.write_queue_nums and config.perm & PERM_WRITE
            perm = (
                pb.Permission.READ_WRITE
                if readable and writable
                else pb.Permission.READ
                if readable
                else pb.Permission.WRITE
            )
            queues.append(self._queue(request.topic, queue_id, perm, endpoints))
        return svc.QueryRouteResponse(status=status(), message_queues=queues)

    async def QueryAssignment(self, request: Any, context: Any) -> Any:
        # One assignment per broker, queue id -1: a receive pops every queue of the topic
        # (RocketMQ's proxy answers the same for pop consumers).
        try:
            self._topic(request.topic, PERM_READ)
            self._group(request.group)
        except Refusal as refusal:
            return svc.QueryAssignmentResponse(status=refused(refusal))
        endpoints = self._endpoints(request.endpoints if request.HasField("endpoints") else None)
        queue = self._queue(request.topic, -1, pb.Permission.READ_WRITE, endpoints)
        return svc.QueryAssignmentResponse(
            status=status(), assignments=[pb.Assignment(message_queue=queue)]
        )

    # ------------------------------------------------------------------ clients

    async def Heartbeat(self, request: Any, context: Any) -> Any:
        return svc.HeartbeatResponse(status=status())

    async def NotifyClientTermination(self, request: Any, context: Any) -> Any:
        session = self.sessions.pop(_metadata(context, "x-mq-client-id"), None)
        if session is not None:
            session.close()
        return svc.NotifyClientTerminationResponse(status=status())

    async def Telemetry(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
        """Answer each settings command, and send the broker's own commands (transaction
        checks); stay open until the client closes the stream."""
        session = TelemetrySession(_metadata(context, "x-mq-client-id"))
        self.sessions[session.client_id] = session

        async def read() -> None:
            try:
                async for command in request_iterator:
                    refused = None if self.access is None else self.access.refusal(command, context)
                    if refused is not None:
                        session.send(svc.TelemetryCommand(status=refused))
                        break
                    if command.HasField("settings"):
                        session.settings = command.settings
                        reply = settings_reply(self.controller, command.settings)
                        session.send(svc.TelemetryCommand(status=status(), settings=reply))
            finally:
                session.close()

        reader = asyncio.ensure_future(read())
        try:
            while (command := await session.outbox.get()) is not None:
                yield command
        finally:
            reader.cancel()
            if self.sessions.get(session.client_id) is session:
                del self.sessions[session.client_id]

    def send_transaction_check(self, half: Any, transaction_id: str) -> bool:
        """Ask a connected producer of the half's topic about it (a checker of the broker's
        transaction service; `half` shows its real topic); False when none is connected."""
        for session in self.sessions.values():
            if session.publishes(half.topic):
                message = to_v2(half, namespace="")
                command = svc.TelemetryCommand(
                    recover_orphaned_transaction_command=svc.RecoverOrphanedTransactionCommand(
                        message=message, transaction_id=transaction_id
                    )
                )
                session.send(command)
                return True
        return False

    async def EndTransaction(self, request: Any, context: Any) -> Any:
        commit = request.resolution == pb.TransactionResolution.COMMIT
        try:
            self._topic(request.topic, PERM_WRITE)
            if request.resolution not in (
                pb.TransactionResolution.COMMIT,
                pb.TransactionResolution.ROLLBACK,
            ):
                raise Refusal(Reason.BAD_REQUEST, "the resolution is neither COMMIT nor ROLLBACK")
            result = self.transactions.end(request.topic.name, request.transaction_id, commit)
            if result is not None:
                result = await self.controller.appender.await_durable(result)
                late = outcome(result)
                if late is not None:
                    return svc.EndTransactionResponse(status=status(V2_CODES[late], late.gloss))
        except Refusal as refusal:
            return svc.EndTransactionResponse(status=refused(refusal))
        return svc.EndTransactionResponse(status=status())

    # ------------------------------------------------------------------ producing

    def _queue_for(self, config: TopicConfig, msg: Any) -> int:
        nums = max(1, config.write_queue_nums)
        sp = msg.system_properties
        if sp.HasField("message_group"):
            # One message group, one queue: its order is the queue's order.
            return zlib.crc32(sp.message_group.encode()) % nums
        return random.randrange(nums)

    async def SendMessage(self, request: Any, context: Any) -> Any:
        if not request.messages:
            return svc.SendMessageResponse(status=status(Code.BAD_REQUEST, "no message to send"))
        entries = []
        for msg in request.messages:
            entries.append(await self._send_one(msg))
        codes = {entry.status.code for entry in entries}
        if len(entries) == 1 or len(codes) == 1:
            top = entries[0].status
        else:
            top = status(Code.MULTIPLE_RESULTS, "the messages have different results")
        return svc.SendMessageResponse(status=top, entries=entries)

    async def _send_one(self, msg: Any) -> Any:
        """Admit, append and await one message through the core; its result entry."""
        ctl = self.controller
        sp = msg.system_properties
        message_id = sp.message_id
        recall_handle = transaction_id = ""
        try:
            config = ctl.admission.send_topic(msg.topic.name)
            self._check_type(sp)
            inner = to_inner(msg, self._queue_for(config, msg), ctl.config.max_message_size)
            ctl.admission.stamp_cluster(inner.properties)
            if sp.message_type == pb.MessageType.TRANSACTION:
                ctl.admission.admit_half(in_batch=False)
            ctl.appender.admit_waiting()
            if sp.message_type == pb.MessageType.TRANSACTION:
                result = self.transactions.prepare(inner)
                if result.status is PutStatus.PUT_OK:
                    transaction_id = self.transactions.transaction_id(result, message_id)
            else:
                result = ctl.appender.store_message(inner)
                if result.status is PutStatus.PUT_OK and inner.topic == TIMER_TOPIC:
                    recall_handle = recall_handle_for(
                        inner.properties, ctl.config.broker_name, message_id
                    )
            result = await ctl.appender.await_durable(result)
            late = outcome(result)
        except Refusal as refusal:
            return svc.SendResultEntry(status=refused(refusal), message_id=message_id)
        except BadMessage as bad:
            return svc.SendResultEntry(status=status(bad.code, str(bad)), message_id=message_id)
        if late is not None:
            return svc.SendResultEntry(
                status=status(V2_CODES[late], late.gloss), message_id=message_id
            )
        return svc.SendResultEntry(
            status=status(),
            message_id=message_id,
            offset=result.records[0].queue_offset,
            recall_handle=recall_handle,
            transaction_id=transaction_id,
        )

    def _check_type(self, sp: Any) -> None:
        """Refuse a type this broker does not serve or one its properties contradict.  A
        DELAY message's delivery timestamp is its TIMER_DELIVER_MS: the core's append makes
        it a timer (and refuses one too far ahead)."""
        kind = sp.message_type
        if kind not in ACCEPTED_TYPES:
            raise Refusal(
                Reason.UNSUPPORTED_TYPE,
                f"message type {pb.MessageType.Name(kind)} is not served by this broker",
            )
        if (kind == pb.MessageType.FIFO) != sp.HasField("message_group") or (
            kind == pb.MessageType.DELAY
        ) != sp.HasField("delivery_timestamp"):
            raise Refusal(
                Reason.TYPE_CONFLICT,
                f"a {pb.MessageType.Name(kind)} message needs a message group exactly when it "
                "is FIFO and a delivery timestamp exactly when it is DELAY",
            )

    async def RecallMessage(self, request: Any, context: Any) -> Any:
        try:
            self._topic(request.topic, PERM_WRITE)
            timers = self.controller.timers
            if timers is None:  # a slave: its master holds the timers
                raise Refusal(Reason.UNAVAILABLE, "recall failed, broker service not available")
            message_id = timers.recall(request.topic.name, request.recall_handle)
        except Refusal as refusal:
            return svc.RecallMessageResponse(status=refused(refusal))
        return svc.RecallMessageResponse(status=status(), message_id=message_id)

    # ------------------------------------------------------------------ consuming

    async def ReceiveMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:
        """Status, then each message, then the delivery timestamp; then the stream ends."""
        try:
            group = self._group(request.group)
            config = self._topic(request.message_queue.topic, PERM_READ)
            expression, sql = self._expression(request.filter_expression)
            invisible_ms = (
                self._invisible_ms(request.invisible_duration, receive=True)
                if request.HasField("invisible_duration")
                else DEFAULT_INVISIBLE_MS
            )
        except Refusal as refusal:
            yield svc.ReceiveMessageResponse(status=refused(refusal))
            return
        batch = max(1, min(request.batch_size or 1, RECEIVE_BATCH_SIZE))
        wait_s = (
            request.long_polling_timeout.ToMilliseconds() / 1000
            if request.HasField("long_polling_timeout")
            else LONG_POLLING_TIMEOUT_S
        )
        remaining = context.time_remaining()
        if remaining is not None:
            wait_s = min(wait_s, remaining - LONG_POLLING_RESERVE_S)
        namespace = request.message_queue.topic.resource_namespace
        wanted = PopRequest(group, config.topic_name, batch, expression, invisible_ms, sql=sql)
        popped = await self.pop.pop_waiting(wanted, wait_s=max(0.0, wait_s))
        if not popped:
            yield svc.ReceiveMessageResponse(
                status=status(Code.MESSAGE_NOT_FOUND, "no new message")
            )
        else:
            yield svc.ReceiveMessageResponse(status=status())
            for p in popped:
                yield svc.ReceiveMessageResponse(
                    message=to_v2(
                        p.message,
                        namespace=namespace,
                        receipt_handle=p.handle,
                        attempt=p.attempt,
                        invisible_ms=invisible_ms,
                    )
                )
        ts = svc.ReceiveMessageResponse()
        ts.delivery_timestamp.GetCurrentTime()
        yield ts

    def _expression(self, expression: Any) -> tuple[TagExpression, Sql92Filter | None]:
        """A receive's filter: a tag expression, or an SQL92 one (with enablePropertyFilter,
        as remoting pulls) evaluated on each message's properties."""
        if expression.type != pb.FilterType.SQL:
            return TagExpression.parse(expression.expression), None
        flt = message_filter(
            SQL92,
            expression.expression,
            property_filter_enabled=self.controller.config.enable_property_filter,
        )
        return TagExpression.parse("*"), flt.sql

    async def AckMessage(self, request: Any, context: Any) -> Any:
        try:
            group = self._group(request.group)
            self._topic(request.topic, PERM_READ)
        except Refusal as refusal:
            return svc.AckMessageResponse(status=refused(refusal))
        entries = []
        for entry in request.entries:
            try:
                self.pop.ack(group, request.topic.name, entry.receipt_handle)
                result = status()
            except Refusal as refusal:
                result = refused(refusal)
            entries.append(
                svc.AckMessageResultEntry(
                    message_id=entry.message_id,
                    receipt_handle=entry.receipt_handle,
                    status=result,
                )
            )
        self.pop.maybe_compact()
        # An ack can release a FIFO queue's next message: parked receives look again.
        self.pop.hold.wake_pops(request.topic.name)
        await self.pop.acks_durable()
        codes = {e.status.code for e in entries}
        if not entries:
            top = status(Code.BAD_REQUEST, "no entry to ack")
        elif len(codes) == 1:
            top = entries[0].status
        else:
            top = status(Code.MULTIPLE_RESULTS, "the entries have different results")
        return svc.AckMessageResponse(status=top, entries=entries)

    async def ChangeInvisibleDuration(self, request: Any, context: Any) -> Any:
        try:
            group = self._group(request.group)
            self._topic(request.topic, PERM_READ)
            invisible_ms = self._invisible_ms(request.invisible_duration, receive=False)
            handle = self.pop.change_invisible(
                group, request.topic.name, request.receipt_handle, invisible_ms
            )
        except Refusal as refusal:
            # The client takes the handle before it reads the status: keep its old one.
            return svc.ChangeInvisibleDurationResponse(
                status=refused(refusal), receipt_handle=request.receipt_handle
            )
        # Visible again after `invisible_ms` (at once for 0, which the clients send for a
        # retry whose backoff rounds down to 0 s): parked receives look again then.
        self.pop.wake_later(request.topic.name, invisible_ms / 1000)
        return svc.ChangeInvisibleDurationResponse(status=status(), receipt_handle=handle)

    async def ForwardMessageToDeadLetterQueue(self, request: Any, context: Any) -> Any:
        try:
            group = self._group(request.group)
            self._topic(request.topic, PERM_READ)
            self.pop.forward_to_dlq(group, request.topic.name, request.receipt_handle)
            self.pop.hold.wake_pops(request.topic.name)
        except Refusal as refusal:
            return svc.ForwardMessageToDeadLetterQueueResponse(status=refused(refusal))
        await self.pop.acks_durable()
        return svc.ForwardMessageToDeadLetterQueueResponse(status=status())
