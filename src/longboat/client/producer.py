"""The producer: turn a `Message` into a stored record on some broker, or a clear error.

A send resolves the topic's route (falling back to the auto-create topic's route when the topic
is new), picks a queue, and sends SEND_MESSAGE_V2 to that broker's master.  `send_timeout` (or
a send's `timeout`) is the deadline of the whole call: failures that may pass — transport
errors and the answers RocketMQ retries on (17, 14, 1, 16, 204, 205) — are retried until it
(or `retry_times` retries, when set), so a send rides out a broker restart shorter than its
deadline.  Sends to a queue chosen by the caller (ordered messages) are retried on that same
queue only, never elsewhere, so a key's messages never leave their queue.  This module encodes
the requests; `send_retry` takes them to a broker.

A `delay=` travels as each attempt's broker takes it: an exact timer (`TIMER_DELAY_MS`) where
the broker serves timer messages, else the delay level rounded up; which brokers do is asked
once per broker and cached (`_internal/broker_timers.py`).

Every message gets a UNIQ_KEY (its `msg_id` for consumers and lookups); bodies of
`compress_over` bytes and more travel zlib-compressed; batches are not compressed (RocketMQ
brokers store batch elements as they come).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
import time
from collections.abc import Callable, Coroutine, Sequence
from datetime import timedelta
from typing import Any, Unpack

from longboat.client._internal.instance import ClientInstance
from longboat.client.config import ClientConfig
from longboat.client.errors import ClientError, ClientUsageError, MessageTooLargeError
from longboat.client.lifecycle import InstanceUser
from longboat.client.message import Message, SendResult
from longboat.client.selector import RoundRobin
from longboat.client.send_retry import (
    Chooser,
    QueueChoice,
    check_choice,
    fixed_chooser,
    queue_chooser,
    require_queues,
    send_with_retries,
    with_delay,
)
from longboat.client.tracing.hooks import begin_send, ended
from longboat.client.tracing.setup import Tracing
from longboat.protocol.batch import join_batch
from longboat.protocol.compression import COMPRESS_OVER, maybe_compress
from longboat.protocol.headers import RecallMessageRequestHeader, SendMessageRequestHeaderV2
from longboat.protocol.ids import UniqKeyGenerator
from longboat.protocol.properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    Prop,
    properties_to_string,
    property_refusal,
)
from longboat.protocol.recall_handle import RecallHandle
from longboat.protocol.topic_names import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_TOPIC_QUEUE_NUMS,
    RETRY_GROUP_TOPIC_PREFIX,
    send_refusal,
)
from longboat.protocol.topic_names import validate_topic as topic_problem
from longboat.protocol.trace import DEFAULT_TRACE_TOPIC
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
_TAGS_PREFIX = f"{Prop.TAGS}{NAME_VALUE_SEPARATOR}"
_UNIQ_KEY_PREFIX = f"{Prop.UNIQ_KEY}{NAME_VALUE_SEPARATOR}"
_UNIQ_KEY_INFIX = f"{PROPERTY_SEPARATOR}{_UNIQ_KEY_PREFIX}"

SendCallback = Callable[[SendResult | None, BaseException | None], Any]


def _now_ms() -> int:
    """Wall-clock milliseconds: born timestamps and unique keys carry the time of day."""
    return int(time.time() * 1000)


def validate_topic(topic: str) -> None:
    """Raise ClientUsageError for a name no broker would accept (nothing is sent)."""
    problem = topic_problem(topic)
    if problem is not None:
        raise ClientUsageError(f"invalid topic: {problem}")


def check_application_message(msg: Message) -> None:
    """Raise ClientUsageError (nothing is sent) for what an application may not send: a topic
    the system reserves, a reserved property name, a separator in a property (RocketMQ's
    Validators.checkMessage and Message.putUserProperty)."""
    problem = send_refusal(msg.topic) or property_refusal(msg.properties)
    if problem is not None:
        raise ClientUsageError(f"invalid message: {problem}")


class Producer(InstanceUser):
    """Sends messages; share one per process and group (it is cheap to call concurrently)."""

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        send_timeout: float = 3.0,
        retry_times: int | None = None,
        compress_over: int = COMPRESS_OVER,
        max_message_size: int = MAX_MESSAGE_SIZE,
        enable_trace: bool = False,
        trace_topic: str = DEFAULT_TRACE_TOPIC,
        open_telemetry: bool = False,
    ) -> None:
        """`enable_trace`: write RocketMQ's trace records of every `send` to `trace_topic`
        (as Java's `enableMsgTrace`); `open_telemetry`: a span per `send`, its context
        carried in the message (needs the `otel` extra).  See docs/client.md, Tracing."""
        super().__init__(config, namesrv_addrs)
        self.group = group
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.compress_over = compress_over
        self.max_message_size = max_message_size
        self._round_robin = RoundRobin()
        self._uniq = UniqKeyGenerator(
            self.config.client_ip, now_ms=_now_ms, pid=os.getpid(), rng=random.Random()
        )
        self._pending: set[asyncio.Task[Any]] = set()
        self._tracing = Tracing(
            self.send_own, self.config, enable_trace=enable_trace, trace_topic=trace_topic,
            open_telemetry=open_telemetry,
        )  # fmt: skip

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._instance is not None:
            return
        instance = ClientInstance.acquire(self.config)
        try:
            instance.register_producer(self.group)
        except ClientError:
            await instance.release()
            raise
        self._instance = instance
        self._tracing.start()

    async def shutdown(self) -> None:
        """Wait for async sends in flight, unregister the group, release the instance."""
        instance, self._instance = self._instance, None
        if instance is None:
            return
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        self._instance = instance  # the last trace records are sent as this producer
        try:
            await self._tracing.close()
        finally:
            self._instance = None
        await instance.unregister_producer(self.group)
        await instance.release()

    def __repr__(self) -> str:
        return f"Producer({self.group})"

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to `topic` may go to, sorted (a topic the brokers do not have
        yet gets the queues auto-creation would give it, as for a send)."""
        route = await self.instance.route(topic, allow_default=True)
        return sorted(require_queues(route.publish_queues, topic))

    # ------------------------------------------------------------------ sending

    async def send(
        self,
        msg: Message | str,
        payload: object = None,
        *,
        timeout: float | None = None,
        **choice: Unpack[QueueChoice],
    ) -> SendResult:
        """Send and wait until the broker stored it: a `Message`, or a topic and a payload
        (`send("Orders", order)`, encoded as `Message.of` encodes it).

        Queue choice (`QueueChoice`): `queue=` if given, else `selector=(queues, msg, arg)`
        with `arg=`, else the hash of `sharding_key=` (ordered messages), else round robin.
        Raises MessageTooLargeError / ClientUsageError (nothing sent), NoRouteError,
        BrokerError (with the broker's code and remark), BrokerBusyError, or
        SendTimeoutError."""
        check_choice(choice)
        msg = _message_of(msg, payload)
        check_application_message(msg)
        return await self._send(msg, timeout, choice)

    async def send_own(self, msg: Message, *, timeout: float | None = None) -> SendResult:
        """Send a message Longboat composes itself (a consumer's retry copy to %RETRY%group,
        a resend, a trace record): reserved topics and properties are its to write, so only
        the topic's legality is checked.  Raises what `send` raises."""
        return await self._send(msg, timeout, {})

    async def _send(self, msg: Message, timeout: float | None, choice: QueueChoice) -> SendResult:
        self.instance  # noqa: B018 - not started: raise before a trace begins
        end = begin_send(self._tracing.observers, self.group, msg)
        header, body, uniq = self._prepare(msg)
        chooser = fixed_chooser(msg, choice)
        send = self._send_encoded(header, body, uniq, chooser, timeout, msg.delay)
        return await ended(end, uniq, send)

    def send_async(
        self,
        msg: Message,
        callback: SendCallback | None = None,
        *,
        timeout: float | None = None,
        **choice: Unpack[QueueChoice],
    ) -> asyncio.Task[SendResult]:
        """Start a send and return its task (awaitable); `callback(result, error)` — a plain or
        async function — runs when it completes.  The options are those of `send`.

        The task raises the send's error when awaited.  With a callback, the callback is where
        a failure is told, so asyncio does not report a task nobody awaits; without one, the
        task is the only place it shows, and asyncio logs "Task exception was never
        retrieved" for one dropped unawaited."""
        check_choice(choice)
        self.instance  # noqa: B018 - raise now, not inside the task, when not started
        send = self.send(msg, timeout=timeout, **choice)
        task = asyncio.ensure_future(self._send_then_call(send, callback))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        if callback is not None:
            task.add_done_callback(_told_to_callback)
        return task

    async def _send_then_call(
        self, send: Coroutine[Any, Any, SendResult], callback: SendCallback | None
    ) -> SendResult:
        try:
            result = await send
        except Exception as exc:
            if callback is not None:
                await _call(callback, None, exc)
            raise
        if callback is not None:
            await _call(callback, result, None)
        return result

    async def recall(self, topic: str, recall_handle: str, *, timeout: float | None = None) -> str:
        """Recall a timer message not yet due (RocketMQ 5.3's `recallMessage`): its message
        id.  The handle is `SendResult.recall_handle`; it names the broker that holds the
        timer.  ClientUsageError for a string that is no handle (nothing sent); BrokerError
        with RocketMQ's code and remark (ILLEGAL_OPERATION 604 for one due already)."""
        try:
            handle = RecallHandle.decode(recall_handle)
        except ValueError as bad:
            raise ClientUsageError(f"{bad}: {recall_handle!r}") from None
        addr = await self.instance.find_master_addr(handle.broker_name, topic)
        header = RecallMessageRequestHeader(
            topic=topic, recallHandle=recall_handle, producerGroup=self.group
        )
        return await self.instance.api.recall_message(
            addr,
            header,
            timeout if timeout is not None else self.send_timeout,
            broker_name=handle.broker_name,
        )

    async def send_oneway(
        self,
        msg: Message | str,
        payload: object = None,
        **choice: Unpack[QueueChoice],
    ) -> None:
        """Send without waiting for the broker: once written to the socket, it is done.  The
        queue is chosen as for `send`."""
        check_choice(choice)
        instance = self.instance
        msg = _message_of(msg, payload)
        check_application_message(msg)
        header, body, _ = self._prepare(msg)
        route = await instance.route(msg.topic, allow_default=True)
        chooser = fixed_chooser(msg, choice)
        mq = (
            chooser(route.publish_queues)
            if chooser
            else self._round_robin.select(require_queues(route.publish_queues, msg.topic))
        )
        addr = await instance.find_master_addr(mq.broker_name, msg.topic)
        if msg.delay is not None:
            header = await with_delay(instance, header, msg.delay, addr)
        await instance.api.send_oneway(addr, mq, header, body)

    async def send_batch(
        self,
        msgs: Sequence[Message],
        *,
        timeout: float | None = None,
        **choice: Unpack[QueueChoice],
    ) -> SendResult:
        """Send messages of one topic as one request; they land in one queue, in order, with
        consecutive offsets.  No delay levels, no retry topics (RocketMQ's batch rules), no
        timers (RocketMQ would deliver them at once; Longboat's broker refuses them).  The
        queue is chosen as for `send`, with the first message."""
        check_choice(choice)
        for m in msgs:
            if m.properties and (problem := property_refusal(m.properties)):
                raise ClientUsageError(f"invalid message: {problem}")
        chooser = fixed_chooser(msgs[0], choice) if msgs else None
        return await self._send_batch(msgs, chooser, timeout)

    async def send_own_batch(
        self, msgs: Sequence[Message], *, timeout: float | None = None
    ) -> SendResult:
        """Send a batch whose properties a Longboat component composes and answers for: the
        Spark sink's rows, whose property maps may name TAGS, KEYS or UNIQ_KEY (docs/spark.md)
        and whose exactly-once chunks carry UNIQ_KEYs of their own.  As `send_batch`, without
        the check of reserved property names."""
        return await self._send_batch(msgs, None, timeout)

    async def _send_batch(
        self,
        msgs: Sequence[Message],
        chooser: Chooser | None,
        timeout: float | None,
    ) -> SendResult:
        if not msgs:
            raise ClientUsageError("send_batch needs at least one message")
        topic = msgs[0].topic
        _check_batch_topic(topic)
        body, uniqs = self._batch_body(msgs, topic)
        return await self._send_batch_body(topic, body, ",".join(uniqs), chooser, timeout)

    async def send_encoded_batch(
        self,
        topic: str,
        body: bytes,
        msg_ids: str,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send a batch body the caller encoded, as `send_batch` sends the one it builds: the
        elements of `protocol.batch.join_batch`, each property string with its UNIQ_KEY
        (`reserve_uniq_keys`), and those keys comma-joined as `msg_ids`.

        For callers that encode many messages at once, column-wise (the Spark sink); the
        per-message rules `send_batch` checks (a body in each, no delay level) are theirs to
        keep."""
        _check_batch_topic(topic)
        chooser = None if queue is None else queue_chooser(queue, topic)
        return await self._send_batch_body(topic, body, msg_ids, chooser, timeout)

    def reserve_uniq_keys(self, n: int) -> tuple[str, int]:
        """`n` UNIQ_KEYs for `send_encoded_batch`, as `UniqKeyGenerator.reserve` gives them
        (the producer's own generator, so they never repeat one it sends itself)."""
        return self._uniq.reserve(n)

    async def _send_batch_body(
        self,
        topic: str,
        body: bytes,
        msg_ids: str,
        chooser: Chooser | None,
        timeout: float | None,
    ) -> SendResult:
        self._check_size(len(body), "batch")
        header = SendMessageRequestHeaderV2(
            producerGroup=self.group,
            topic=topic,
            defaultTopic=AUTO_CREATE_TOPIC_KEY,
            defaultTopicQueueNums=DEFAULT_TOPIC_QUEUE_NUMS,
            queueId=-1,
            sysFlag=0,
            bornTimestamp=_now_ms(),
            flag=0,
            properties=None,
            reconsumeTimes=0,
            unitMode=False,
            batch=True,
        )
        return await self._send_encoded(header, body, msg_ids, chooser, timeout)

    async def _send_encoded(
        self,
        header: SendMessageRequestHeaderV2,
        body: bytes,
        msg_id: str,
        chooser: Chooser | None,
        timeout: float | None,
        delay: timedelta | None = None,
    ) -> SendResult:
        """Send an encoded request with this producer's retries (`send_retry`); `timeout`
        overrides `send_timeout` as the deadline of the whole call; a `delay` is added to
        each attempt's header as the broker of that attempt takes it."""
        budget = self.send_timeout if timeout is None else timeout
        return await send_with_retries(
            self.instance,
            self._round_robin,
            header,
            body,
            msg_id,
            chooser,
            budget,
            self.retry_times,
            delay,
        )

    # ------------------------------------------------------------------ internals

    def _batch_body(self, msgs: Sequence[Message], topic: str) -> tuple[bytes, list[str]]:
        """The SEND_BATCH_MESSAGE body and each message's UNIQ_KEY.  A message with only a
        tag (the common shape) has its property string written directly, the same bytes
        `wire_properties` would give, without a dict per message."""
        elements: list[tuple[bytes, bytes, int]] = []
        uniqs = self._uniq.next_many(len(msgs))
        for i, m in enumerate(msgs):
            body = m.body
            if m.topic != topic or m.delayed or m.deliver_at is not None or not body:
                _refuse_in_batch(m, topic)
            if m.properties or m.keys:
                props = m.wire_properties()
                uniqs[i] = props.setdefault(Prop.UNIQ_KEY, uniqs[i])
                text = properties_to_string(props)
            elif m.tags:
                text = f"{_TAGS_PREFIX}{m.tags}{_UNIQ_KEY_INFIX}{uniqs[i]}"
            else:
                text = _UNIQ_KEY_PREFIX + uniqs[i]
            elements.append((body, text.encode(), m.flag))
        return join_batch(elements), uniqs

    def _check_size(self, size: int, what: str) -> None:
        if size > self.max_message_size:
            raise MessageTooLargeError(
                f"{what} of {size} bytes is over the producer's max_message_size "
                f"{self.max_message_size}; nothing was sent"
            )

    def _prepare(self, msg: Message) -> tuple[SendMessageRequestHeaderV2, bytes, str]:
        """The send header (its queue id is set per attempt, on the wire), the wire body and
        the UNIQ_KEY."""
        validate_topic(msg.topic)
        _check_body(msg)
        props = msg.wire_properties()
        uniq = props.setdefault(Prop.UNIQ_KEY, self._uniq.next())
        reconsume_times = 0
        max_reconsume: int | None = None
        if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            # Java moves these two into the header for retry-topic sends (send-back fallback).
            reconsume_times = int(props.pop(Prop.RECONSUME_TIME, "0") or 0)
            if Prop.MAX_RECONSUME_TIMES in props:
                max_reconsume = int(props.pop(Prop.MAX_RECONSUME_TIMES))
        body, sys_flag = maybe_compress(msg.body, 0, self.compress_over)
        # The limit is the broker's, on what it receives: the body as it travels.
        self._check_size(
            len(body), "message body" + (" compressed" if body is not msg.body else "")
        )
        header = SendMessageRequestHeaderV2(
            producerGroup=self.group,
            topic=msg.topic,
            defaultTopic=AUTO_CREATE_TOPIC_KEY,
            defaultTopicQueueNums=DEFAULT_TOPIC_QUEUE_NUMS,
            queueId=-1,
            sysFlag=sys_flag,
            bornTimestamp=_now_ms(),
            flag=msg.flag,
            properties=properties_to_string(props),
            reconsumeTimes=reconsume_times,
            unitMode=False,
            maxReconsumeTimes=max_reconsume,
        )
        return header, body, uniq


def _message_of(msg: Message | str, payload: object) -> Message:
    """What `send(msg)` or `send(topic, payload)` sends (ClientUsageError for a mix-up)."""
    if isinstance(msg, Message):
        if payload is not None:
            raise ClientUsageError("send a Message, or a topic and a payload, not both")
        return msg
    if payload is None:
        raise ClientUsageError(f"send({msg!r}, payload): the payload is missing")
    return Message.of(msg, payload)


def _check_body(msg: Message) -> None:
    if not msg.body:
        raise ClientUsageError("message body is empty")


def _refuse_in_batch(msg: Message, topic: str) -> None:
    """ClientUsageError for a message a batch to `topic` cannot hold (called only for one)."""
    if msg.topic != topic:
        raise ClientUsageError(f"a batch must have one topic: {topic!r} and {msg.topic!r}")
    if msg.delayed:
        raise ClientUsageError("batched messages cannot be delayed")
    if msg.deliver_at is not None:
        raise ClientUsageError("batched messages cannot be timers: send each on its own")
    _check_body(msg)


def _check_batch_topic(topic: str) -> None:
    if problem := send_refusal(topic):
        raise ClientUsageError(f"invalid topic: {problem}")


def _told_to_callback(task: asyncio.Task[SendResult]) -> None:
    """Mark the failure of a task whose callback has been told of it as retrieved (asyncio
    would log it when the task is dropped); awaiting the task still raises it."""
    if not task.cancelled():
        task.exception()


async def _call(
    callback: SendCallback, result: SendResult | None, exc: BaseException | None
) -> None:
    try:
        outcome = callback(result, exc)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        log.exception("send callback failed")
