"""Payload listeners: `def on_order(order: Order)` gets each message's body decoded as an Order.

The annotation of a listener's first parameter decides, once, at registration:

* a listener of one parameter annotated with a payload type (`order: Order`), or of two
  whose second is annotated `MessageExt` (`order: Order, msg: MessageExt`, for keys and ids)
  is a payload listener; its type's codec (`client.payloads.codec_for`) must exist, else
  ClientUsageError at registration;
* everything else — `(msgs, context)` listeners, annotated or not — is a message listener
  and is called as it always was.

A payload listener is wrapped into a message listener of the kind it was registered as, so
the consume services, the result table of `push.listener` and the blocking facade see no
difference.  The wrapper takes the batch's messages in order and stops at the first that
fails:

* a body that does not decode is recorded with its reason on the context
  (`FailureReasons`), so it goes to the retry path with the reason in property
  FAILURE_REASON and, after `max_reconsume_times`, to the DLQ — the consumer never stops;
* the listener raising fails the batch, as for a message listener (logged by the service);
* returning None (or SUCCESS) goes on to the next message.

In a concurrent batch the messages before the failing one are acknowledged (`ack_index`);
an orderly batch is suspended whole, as orderly batches always are.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, get_origin, get_type_hints

from longboat.client.errors import ClientUsageError, PayloadError
from longboat.client.payloads import Codec, codec_for, decode
from longboat.client.push.listener import (
    ConcurrentContext,
    ConsumeResult,
    OrderlyContext,
    OrderlyResult,
    is_async,
)
from longboat.protocol.message import MessageExt

log = logging.getLogger(__name__)

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def payload_type(listener: Callable[..., Any]) -> Any | None:
    """The payload type `listener` takes, or None for a message listener (see module doc);
    ClientUsageError for one parameter annotated with messages (it would never be called)."""
    try:
        params = _positional(listener)
    except (TypeError, ValueError):  # no signature to read: as before, a message listener
        return None
    if not 1 <= len(params) <= 2:
        return None
    try:
        target = listener if inspect.isroutine(listener) else type(listener).__call__
        hints = get_type_hints(target)
    except Exception as exc:
        if len(params) == 2:  # as before, a message listener (annotated with what it may)
            return None
        # One parameter: a payload listener whose type cannot be found, e.g. a class defined
        # inside a function under `from __future__ import annotations`.
        raise ClientUsageError(
            f"cannot resolve the annotation of {_name(listener)}'s parameter ({exc}): define "
            "its type at module level"
        ) from exc
    if len(params) == 2 and hints.get(params[1].name) is not MessageExt:
        return None
    first = hints.get(params[0].name)
    if first is None or first is Any:
        return None
    if first is MessageExt or first is list or get_origin(first) is list:
        raise ClientUsageError(
            f"{_name(listener)} takes {first!r}: a listener takes (messages, context), or one "
            "payload (order: Order), optionally with its message (order: Order, msg: MessageExt)"
        )
    return first


def as_message_listener(listener: Callable[..., Any], *, orderly: bool) -> Callable[..., Any]:
    """`listener` itself when it is a message listener, else a message listener of the
    registered kind that decodes each message for it.  ClientUsageError for a payload type no
    codec serves."""
    type_ = payload_type(listener)
    if type_ is None:
        return listener
    batch = _PayloadBatch(listener, type_, codec_for(type_), orderly=orderly)
    if is_async(listener):

        async def call_async(
            msgs: list[MessageExt], context: ConcurrentContext | OrderlyContext
        ) -> Any:
            for i, msg in enumerate(msgs):
                args = batch.arguments(msg, context)
                if args is None:
                    return batch.failed_at(i, context)
                result = await listener(*args)
                if result is not None and result is not batch.success:
                    return batch.returned(result, i, context)
            return None

        wrapper: Callable[..., Any] = call_async
    else:

        def call(msgs: list[MessageExt], context: ConcurrentContext | OrderlyContext) -> Any:
            for i, msg in enumerate(msgs):
                args = batch.arguments(msg, context)
                if args is None:
                    return batch.failed_at(i, context)
                result = listener(*args)
                if result is not None and result is not batch.success:
                    return batch.returned(result, i, context)
            return None

        wrapper = call
    # Its name in logs and errors; not `wraps`, whose copied annotations would make the
    # wrapper a payload listener again.
    names = ("__module__", "__name__", "__qualname__")
    functools.update_wrapper(wrapper, listener, assigned=names, updated=())
    return wrapper


class _PayloadBatch:
    """What the wrapper does at each message of a batch, for either way of calling."""

    def __init__(
        self, listener: Callable[..., Any], type_: Any, codec: Codec, *, orderly: bool
    ) -> None:
        self.listener = listener
        self.type = type_
        self.codec = codec
        self.with_message = len(_positional(listener)) == 2
        self.success: Any = OrderlyResult.SUCCESS if orderly else ConsumeResult.SUCCESS

    def arguments(
        self, msg: MessageExt, context: ConcurrentContext | OrderlyContext
    ) -> tuple[Any, ...] | None:
        """The listener's arguments for `msg`; None when its body does not decode (the
        reason recorded on the context, for the retry copy)."""
        try:
            payload = decode(msg, self.type, self.codec)
        except PayloadError as exc:
            context.fail_because(msg, str(exc))
            log.warning("%s: message %s goes to the retry path: %s", _name(self.listener), msg, exc)
            return None
        return (payload, msg) if self.with_message else (payload,)

    def failed_at(self, index: int, context: ConcurrentContext | OrderlyContext) -> Any:
        """The batch's result when its message `index` failed: the ones before acknowledged
        (concurrent), or the whole batch tried again (orderly)."""
        if isinstance(context, ConcurrentContext):
            context.ack_index = index - 1
            return ConsumeResult.SUCCESS
        return OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT

    def returned(self, result: Any, index: int, context: ConcurrentContext | OrderlyContext) -> Any:
        """The batch's result when the listener returned `result` (not success) for message
        `index`: RECONSUME_LATER keeps the messages before it acknowledged; anything else is
        the batch's result, read by the consume service as ever."""
        concurrent = isinstance(context, ConcurrentContext)
        if result is ConsumeResult.RECONSUME_LATER and index > 0 and concurrent:
            return self.failed_at(index, context)
        return result


def _positional(listener: Callable[..., Any]) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(listener).parameters.values() if p.kind in _POSITIONAL]


def _name(listener: Callable[..., Any]) -> str:
    return getattr(listener, "__qualname__", None) or repr(listener)
