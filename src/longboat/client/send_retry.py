"""How an encoded send reaches a broker: which queue, and the retries within its deadline.

The producer encodes a message once (`Producer._prepare`, `_send_batch_body`); this module
takes the header and body from there to a stored record or a clear error.  The deadline
(`budget` seconds) bounds the whole call: failures that may pass — transport errors and the
answers RocketMQ retries on (`PRODUCER_RETRYABLE_CODES`) — are retried until it (or
`retry_times` retries, when set), with jittered exponential pauses from `FIRST_BACKOFF` to
`MAX_BACKOFF`, round robin stepping off the broker that failed, and the route asked again
after a transport error.  A queue the caller chose (a `Chooser`) is retried on that queue
only, and only while its broker is busy, so a key's messages never leave their queue.  A
delayed message's delay is written into each attempt's header as that attempt's broker
takes it (an exact timer or a delay level, `with_delay`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypedDict

from longboat.client._internal.instance import ClientInstance
from longboat.client._internal.route import TopicRoute
from longboat.client.errors import (
    BrokerBusyError,
    BrokerError,
    ClientError,
    ClientUsageError,
    NoRouteError,
    SendTimeoutError,
    TransportError,
)
from longboat.client.message import Message, SendResult, delay_property
from longboat.client.selector import QueueSelector, RoundRobin, select_by_hash
from longboat.protocol.codes import PRODUCER_RETRYABLE_CODES, ResponseCode
from longboat.protocol.headers import SendMessageRequestHeaderV2
from longboat.protocol.properties import PROPERTY_SEPARATOR, properties_to_string
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

# Pauses between retries of one send (jittered; the send's deadline bounds them all).
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0

# The queue a caller fixed for a send, picked from the topic's writable queues.
Chooser = Callable[[Sequence[MessageQueue]], MessageQueue]


def require_queues(queues: Sequence[MessageQueue], topic: str) -> Sequence[MessageQueue]:
    """`queues`, or NoRouteError when the topic has none to write to."""
    if not queues:
        raise NoRouteError(
            ResponseCode.TOPIC_NOT_EXIST,
            f"topic {topic} has no writable queue on any master broker",
        )
    return queues


class QueueChoice(TypedDict, total=False):
    """The caller's choice of queue for a send, by precedence: `queue` (one of the message's
    topic), else `selector(queues, msg, arg)`, else the hash of `sharding_key` (ordered
    messages, RocketMQ's `SelectMessageQueueByHash`); none of them leaves it to round robin.
    The keyword arguments of every send that lets the caller choose."""

    queue: MessageQueue | None
    selector: QueueSelector | None
    arg: Any
    sharding_key: Any


def check_choice(choice: QueueChoice) -> None:
    """TypeError, as a call with an unknown keyword argument raises, for a key of `choice`
    that names no choice (type checkers refuse it before)."""
    if unknown := choice.keys() - QueueChoice.__optional_keys__:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")


def fixed_chooser(msg: Message, choice: QueueChoice) -> Chooser | None:
    """What `choice` fixes for `msg`; None leaves the queue to round robin."""
    queue, selector = choice.get("queue"), choice.get("selector")
    arg, sharding_key = choice.get("arg"), choice.get("sharding_key")
    if queue is not None:
        return queue_chooser(queue, msg.topic)
    if selector is not None:
        return lambda queues: selector(queues, msg, arg)
    if sharding_key is not None:
        return lambda queues: select_by_hash(queues, msg, sharding_key)
    return None


def queue_chooser(queue: MessageQueue, topic: str) -> Chooser:
    """Always `queue` (ClientUsageError, nothing sent, when it is not one of `topic`'s)."""
    if queue.topic != topic:
        raise ClientUsageError(f"queue {queue} is not a queue of topic {topic}")
    return lambda _queues: queue


async def send_with_retries(
    instance: ClientInstance,
    round_robin: RoundRobin,
    header: SendMessageRequestHeaderV2,
    body: bytes,
    msg_id: str,
    chooser: Chooser | None,
    budget: float,
    retry_times: int | None,
    delay: timedelta | None = None,
) -> SendResult:
    """Send the encoded request to `header.topic`'s master brokers until one stores it,
    retrying as the module says; a `delay` is added to each attempt's header as the broker
    of that attempt takes it (`with_delay`).  Raises BrokerError (and its NoRouteError,
    BrokerBusyError) for an answer no retry can help or the last one, SendTimeoutError when
    the deadline passed after transport errors only."""
    topic = header.topic
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget
    failed_broker: str | None = None
    last: ClientError | None = None
    refresh = False
    route: TopicRoute | None = None
    retries = 0
    # Brokers that refused to auto-create the topic: once all have, no retry can help.
    refused: set[str] = set()
    while (remaining := deadline - loop.time()) > 0:
        if last is not None:
            if retry_times is not None and retries >= retry_times:
                break
            retries += 1
            # Jittered exponential back-off, so a restarting broker is not hammered and
            # the senders of one process do not come back in lock step.
            pause = min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** (retries - 1))
            await asyncio.sleep(min(remaining, pause * random.uniform(0.5, 1.0)))
            if (remaining := deadline - loop.time()) <= 0:
                break
        route = await _route(instance, topic, refresh=refresh, known=route)
        queues = require_queues(route.publish_queues, topic)
        mq = chooser(queues) if chooser else round_robin.select(queues, failed_broker)
        addr: str | None = None
        try:
            addr = route.master_addr(mq.broker_name) or await instance.find_master_addr(
                mq.broker_name, topic
            )
            sent = header if delay is None else await with_delay(instance, header, delay, addr)
            return await instance.api.send(addr, mq, sent, body, msg_id=msg_id, timeout=remaining)
        except BrokerError as exc:
            if delay is not None and addr is not None:
                instance.timers.forget(addr)  # restarted with other settings, maybe
            if exc.code not in PRODUCER_RETRYABLE_CODES:
                raise
            if exc.code == ResponseCode.TOPIC_NOT_EXIST and route.via_default_topic:
                refused.add(mq.broker_name)
                exc = NoRouteError(
                    exc.code,
                    f"topic {topic} does not exist and broker {mq.broker_name} does not "
                    f"create topics on first send; create it first ({exc.remark})",
                    addr=exc.addr,
                    request_code=exc.request_code,
                    retriable=False,
                )
                if refused >= {q.broker_name for q in queues}:
                    raise exc from None
            # A caller-chosen queue is retried only while its broker is busy.
            if chooser is not None and not isinstance(exc, BrokerBusyError):
                raise
            last = exc
            refresh = exc.code == ResponseCode.TOPIC_NOT_EXIST
        except TransportError as exc:
            # The broker may be restarting, or gone with its queues moved: ask again.
            if delay is not None and addr is not None:
                instance.timers.forget(addr)
            last, refresh = exc, True
        failed_broker = mq.broker_name
        log.info("send to %s failed (retry %d): %s", mq, retries, last)
    if last is None or isinstance(last, TransportError):
        raise SendTimeoutError(
            f"send to {topic} did not complete within {budget:.1f}s"
            + (f" ({retries} retries); last error: {last}" if last else "")
        ) from last
    raise last


async def _route(
    instance: ClientInstance, topic: str, *, refresh: bool, known: TopicRoute | None
) -> TopicRoute:
    """The topic's route.  A refresh that fails keeps the route `known` from the previous
    attempt: a broker that stopped cleanly has unregistered from the name server, which
    forgets the topic until the broker is back, yet the retry must still go to it."""
    if refresh and known is not None:
        try:
            return await instance.route(topic, allow_default=True, refresh=True)
        except (TransportError, NoRouteError) as exc:
            log.info("route of %s not refreshed, retrying on the known one: %s", topic, exc)
            return known
    return await instance.route(topic, allow_default=True)


async def with_delay(
    instance: ClientInstance, header: SendMessageRequestHeaderV2, delay: timedelta, addr: str
) -> SendMessageRequestHeaderV2:
    """`header` with `delay`'s property for the broker at `addr`: an exact timer where it
    serves timers, else the delay level rounded up (ClientUsageError when none is long
    enough; nothing is sent).  Raises TransportError when the broker cannot be asked."""
    name, value = delay_property(delay, timers=await instance.timers.serve_timers(addr))
    pair = properties_to_string({name: value})
    text = f"{header.properties}{PROPERTY_SEPARATOR}{pair}" if header.properties else pair
    return replace(header, properties=text)
