"""What applications register on a push consumer: listeners, their results and contexts.

A listener may be a plain function (run on the consumer's thread pool, so it may block) or an
`async def` (run on the event loop, so it must not block).  Both get a list of messages (at most
`consume_message_batch_max_size`) and a context, and return a result:

| the listener            | concurrent (`ConsumeResult`) | orderly (`OrderlyResult`)      |
|-------------------------|------------------------------|--------------------------------|
| returns None (nothing)  | SUCCESS                      | SUCCESS                        |
| returns the enum        | as it says                   | as it says                     |
| raises                  | RECONSUME_LATER              | SUSPEND_CURRENT_QUEUE_A_MOMENT |
| returns the other enum  | usage error: consumer stops  | usage error: consumer stops    |
| returns anything else   | RECONSUME_LATER (warned once)| SUSPEND_... (warned once)      |

So the common listener is just a function that processes its messages.  None is success
because a Python function that falls off its end returns None (Java's listeners must return
a status, and a null one is RECONSUME_LATER); any other value — `True`, `"ok"` — is a mistake
the consumer cannot read, so it is treated as a failure (nothing is lost) and logged once per
consumer with what was returned.

The other kind's enum (`ConsumeResult.SUCCESS` from an orderly listener, say) is a listener
registered as the wrong kind.  Read as a failure it would suspend an orderly queue forever, so
at its first appearance it is a `ListenerKindError`: logged once with the fix, the consumer
stops pulling and consuming (`PushConsumer.listener_error` holds it) and the messages stay
uncommitted, so the corrected consumer gets them again.  `register_concurrent` /
`register_orderly` (or `register_listener`'s overloads) let a type checker catch it sooner, and
a listener whose return annotation names the other enum is refused at registration.

A listener of one annotated payload (`def on_order(order: Order)`) is wrapped at
registration into a message listener of its kind (`push.typed`); what it records on the
context (`FailureReasons`) travels with the retry copies of the messages that failed.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, NotRequired, TypedDict, TypeVar, get_type_hints

from longboat.client.consume.process_queue import ProcessQueue
from longboat.client.errors import ClientUsageError
from longboat.client.push.inflight import InFlight
from longboat.client.push.redelivery import Redelivery
from longboat.client.tasks import ended
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MessageQueue

R = TypeVar("R")
# The pending work a WorkerPool queues.
W = TypeVar("W")
log = logging.getLogger(__name__)

# What a consume service reports once messages are done with: the queue, its process queue,
# and its new committed offset (None when it did not move).
Consumed = Callable[[MessageQueue, ProcessQueue, int | None], None]


class ConsumeResult(Enum):
    """Outcome of a concurrent listener."""

    SUCCESS = "CONSUME_SUCCESS"
    # Deliver the failed messages again later (through the group's retry topic).
    RECONSUME_LATER = "RECONSUME_LATER"


class OrderlyResult(Enum):
    """Outcome of an orderly listener."""

    SUCCESS = "SUCCESS"
    # Keep the batch at the head of its queue and try it again after `context.suspend_time`.
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class ListenerKindError(ClientUsageError):
    """A listener returned the other kind's result: it was registered as the wrong kind."""


def other_kind(kind: type[Enum]) -> type[Enum]:
    return OrderlyResult if kind is ConsumeResult else ConsumeResult


def kind_mistake(listener: Callable[..., Any], kind: type[Enum]) -> ListenerKindError:
    """The error for `listener` (registered for `kind`) returning the other kind's enum."""
    name = getattr(listener, "__qualname__", repr(listener))
    if kind is OrderlyResult:
        registered, fix = "an orderly", "register_concurrent(listener)"
    else:
        registered, fix = "a concurrent", "register_orderly(listener)"
    return ListenerKindError(
        f"{name} is registered as {registered} listener, which returns {kind.__name__} (or "
        f"None), but it returns {other_kind(kind).__name__}: return {kind.__name__}, or "
        f"register it with {fix}"
    )


def check_annotation(listener: Callable[..., Any], kind: type[Enum]) -> None:
    """Refuse at registration a listener whose return annotation names only the other kind's
    enum (the mistake found before any message is consumed)."""
    try:
        target = listener if inspect.isroutine(listener) else type(listener).__call__
        hints = get_type_hints(target)
    except Exception:  # unresolvable annotations: the first call's check remains
        return
    named = str(hints.get("return", ""))
    if other_kind(kind).__name__ in named and kind.__name__ not in named:
        raise kind_mistake(listener, kind)


# What a listener's failure means for each kind: redeliver later, or retry the queue's head.
_FAILURE: dict[type[Enum], Enum] = {
    ConsumeResult: ConsumeResult.RECONSUME_LATER,
    OrderlyResult: OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT,
}


class ResultReader:
    """Reads a listener's return value as the table above says, warning once about a value
    that is neither None nor a result, raising `ListenerKindError` for the other kind's."""

    def __init__(
        self,
        listener: Callable[..., Any],
        kind: type[ConsumeResult] | type[OrderlyResult],
        on_kind_error: Callable[[ListenerKindError], None] | None = None,
    ) -> None:
        self.listener = listener
        self.kind: type[Enum] = kind
        self.success: Enum = kind.SUCCESS
        self.failure: Enum = _FAILURE[kind]
        self.on_kind_error = on_kind_error
        self.warned = False
        # Set at the first result of the other kind; the service consumes nothing after it.
        self.error: ListenerKindError | None = None

    def read(self, value: object) -> Any:
        if value is None:
            return self.success
        if isinstance(value, self.kind):
            return value
        if isinstance(value, other_kind(self.kind)):
            if self.error is None:
                self.error = kind_mistake(self.listener, self.kind)
                log.error("%s; consuming stopped, the messages stay uncommitted", self.error)
                if self.on_kind_error is not None:
                    self.on_kind_error(self.error)
            raise self.error
        if not self.warned:
            self.warned = True
            log.warning(
                "a listener returned %r, which is neither None (success) nor a %s: treated as "
                "%s (warned once per consumer)",
                value,
                self.kind.__name__,
                self.failure.name,
            )
        return self.failure


class FailureReasons:
    """Why messages of a batch failed, for the copies that carry them: a message recorded
    here goes to its retry (or dead-letter) copy with the reason in property FAILURE_REASON
    (`push.redelivery`).  A payload listener records the bodies that do not decode."""

    __slots__ = ()
    reasons: dict[int, str]  # by id() of the message, as the batch holds the objects

    def fail_because(self, msg: MessageExt, reason: str) -> None:
        self.reasons[id(msg)] = reason

    def reason_for(self, msg: MessageExt) -> str | None:
        return self.reasons.get(id(msg))


@dataclass(slots=True)
class ConcurrentContext(FailureReasons):
    mq: MessageQueue
    # 0: the broker picks the delay from the reconsume count; >0 an explicit delay level.
    delay_level_when_next_consume: int = 0
    # With SUCCESS, messages after this index still count as failed (-1 = all failed);
    # None means "as the result says".
    ack_index: int | None = None
    reasons: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class OrderlyContext(FailureReasons):
    mq: MessageQueue
    # Seconds to wait before a suspended batch is tried again.
    suspend_time: float = 1.0
    reasons: dict[int, str] = field(default_factory=dict)


ConcurrentListener = Callable[
    [list[MessageExt], ConcurrentContext],
    ConsumeResult | Awaitable[ConsumeResult | None] | None,
]
OrderlyListener = Callable[
    [list[MessageExt], OrderlyContext],
    OrderlyResult | Awaitable[OrderlyResult | None] | None,
]
# A listener registered with an `orderly` flag known only at run time must do for either kind:
# take either context and return None (success; raising is failure), so a listener typed for
# one kind is refused by a type checker whatever the flag.
EitherKindListener = Callable[
    [list[MessageExt], ConcurrentContext | OrderlyContext], Awaitable[None] | None
]


# A listener of one decoded payload (see `push.typed`), optionally with its message; it
# returns None, or raises to have the message delivered again.
PayloadListener = (
    Callable[[Any], Awaitable[None] | None] | Callable[[Any, MessageExt], Awaitable[None] | None]
)


def is_async(listener: Callable[..., Any]) -> bool:
    call = getattr(listener, "__call__", None)  # noqa: B004 - objects with async __call__
    return inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(call)


async def call_listener(
    listener: Callable[..., Any],
    is_coroutine: bool,
    executor: Executor,
    *args: Any,
) -> Any:
    """Run a listener where it belongs: awaited on the loop, or on the pool's threads."""
    if is_coroutine:
        return await listener(*args)
    return await asyncio.get_running_loop().run_in_executor(executor, listener, *args)


class ConsumeServiceOptions(TypedDict):
    """What every consume service is built with, beside its listener (the push consumer
    gives them from its settings)."""

    workers: int
    batch_max: int
    redelivery: Redelivery | None
    consumed: Consumed
    consume_timeout: NotRequired[float]
    on_kind_error: NotRequired[Callable[[ListenerKindError], None] | None]


_SERVICE_OPTIONS = ConsumeServiceOptions.__required_keys__ | ConsumeServiceOptions.__optional_keys__
DEFAULT_CONSUME_TIMEOUT_S = 15 * 60.0


class WorkerPool(Generic[W]):
    """What every consume service builds and stops alike: its listener and the reading of its
    results, its scheduled retries, its queue of pending work (of W), the listener calls in
    flight, its worker tasks and their thread pool, and where its outcomes go (`redelivery`
    for failed messages, `consumed` for the new committed offset of a queue)."""

    def __init__(
        self,
        listener: Callable[..., Any],
        kind: type[ConsumeResult] | type[OrderlyResult],
        thread_name_prefix: str,
        options: ConsumeServiceOptions,
    ) -> None:
        if unknown := options.keys() - _SERVICE_OPTIONS:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        self.listener = listener
        self._is_async = is_async(listener)
        self._results = ResultReader(listener, kind, options.get("on_kind_error"))
        self.workers = options["workers"]
        self.batch_max = options["batch_max"]
        self.redelivery = options["redelivery"]
        self._consumed = options["consumed"]
        self.consume_timeout = options.get("consume_timeout", DEFAULT_CONSUME_TIMEOUT_S)
        self.inflight = InFlight()
        self._pending: asyncio.Queue[W] = asyncio.Queue()
        self._timers: set[asyncio.TimerHandle] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=thread_name_prefix)

    async def _verdict(self, msgs: list[MessageExt], context: object, where: str) -> Any:
        """Call the listener on `msgs` and read its result as the table above says (its
        kind's failure when it raised, logged as a failure `where`); None after a result of
        the other kind, which stops the service (`ListenerKindError`)."""
        try:
            result = await call_listener(
                self.listener, self._is_async, self._executor, msgs, context
            )
        except Exception:
            log.exception("listener failed on %d message(s) %s", len(msgs), where)
            result = self._results.failure
        try:
            return self._results.read(result)
        except ListenerKindError:
            return None

    async def stop(self, timeout: float) -> None:
        """No more scheduled retries, queued work dropped (its messages stay uncommitted, so
        they are pulled again), running listeners given `timeout` to finish so their offsets
        can be committed, then the workers and the pool go."""
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        while not self._pending.empty():
            self._pending.get_nowait()
        await self.inflight.wait_all_idle(timeout)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            await ended(task)
        self._executor.shutdown(wait=False, cancel_futures=True)
