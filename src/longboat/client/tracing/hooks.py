"""What the producer and the push consumer call around a send and a listener call, so
tracing (RocketMQ's trace records, OpenTelemetry spans) plugs in at one place in each.

A send observer's `begin` runs before the message is encoded (it may add properties: W3C
trace context) and returns what to call when the send ends.  A consume observer's
`received` runs when pulled messages are handed to the consume service, its `begin` right
before the listener, on the listener's own thread (so a span it makes current is the
listener's parent), and what `begin` returns right after, with the outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from longboat.client.message import Message, SendResult
from longboat.protocol.message import MessageExt

# (msg_id, result or None, error or None)
SendEnd = Callable[[str, SendResult | None, BaseException | None], None]
# (success) — False when the listener raised or asked for a redelivery.
ConsumeEnd = Callable[[bool], None]


class SendObserver(Protocol):
    def begin_send(self, group: str, msg: Message) -> SendEnd: ...


class ConsumeObserver(Protocol):
    def received(self, group: str, msgs: Sequence[MessageExt]) -> None: ...

    def begin_consume(self, group: str, msgs: Sequence[MessageExt]) -> ConsumeEnd: ...


class Observer(SendObserver, ConsumeObserver, Protocol):
    """Both: every tracer observes sends and deliveries."""


def begin_send(observers: Sequence[SendObserver], group: str, msg: Message) -> SendEnd | None:
    """Every observer's `begin_send`; one callable ending them all (None without observers)."""
    if not observers:
        return None
    if len(observers) == 1:
        return observers[0].begin_send(group, msg)
    ends = [o.begin_send(group, msg) for o in observers]

    def end(msg_id: str, result: SendResult | None, error: BaseException | None) -> None:
        for e in ends:
            e(msg_id, result, error)

    return end


async def ended(end: SendEnd | None, msg_id: str, send: Awaitable[SendResult]) -> SendResult:
    """Await `send` and hand its outcome (result or error) to `end`, what `begin_send`
    returned; the outcome is `send`'s."""
    if end is None:
        return await send
    try:
        result = await send
    except BaseException as exc:
        end(msg_id, None, exc)
        raise
    end(msg_id, result, None)
    return result


def begin_consume(
    observers: Sequence[ConsumeObserver], group: str, msgs: Sequence[MessageExt]
) -> ConsumeEnd:
    """Every observer's `begin_consume`, ended in the reverse order (spans nest)."""
    ends = [o.begin_consume(group, msgs) for o in observers]

    def end(success: bool) -> None:
        for e in reversed(ends):
            e(success)

    return end
