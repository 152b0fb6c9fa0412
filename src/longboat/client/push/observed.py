"""A listener wrapped so tracing observers see each call (`client/tracing/hooks.py`).

The wrapper is of the listener's own kind (a plain function for a plain listener, so it runs
on the pool's thread with it; a coroutine function for an async one), so a process span the
observers make current is current inside the listener.  It returns what the listener
returned and raises what it raised: the consume service reads the result as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from longboat.client.push.listener import ConsumeResult, OrderlyResult, is_async
from longboat.client.tracing.hooks import ConsumeObserver, begin_consume
from longboat.protocol.message import MessageExt

_SUCCESS = (None, ConsumeResult.SUCCESS, OrderlyResult.SUCCESS)


def observed_listener(
    listener: Callable[..., Any], observers: Sequence[ConsumeObserver], group: str
) -> Callable[..., Any]:
    """`listener` itself without observers; else the wrapper (see the module docstring)."""
    if not observers:
        return listener

    if is_async(listener):

        @functools.wraps(listener)
        async def observed_async(msgs: list[MessageExt], context: Any) -> Any:
            end = begin_consume(observers, group, msgs)
            try:
                result = await listener(msgs, context)
            except BaseException:
                end(False)
                raise
            end(result in _SUCCESS)
            return result

        return observed_async

    @functools.wraps(listener)
    def observed(msgs: list[MessageExt], context: Any) -> Any:
        end = begin_consume(observers, group, msgs)
        try:
            result = listener(msgs, context)
        except BaseException:
            end(False)
            raise
        end(result in _SUCCESS)
        return result

    return observed
