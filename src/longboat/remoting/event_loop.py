"""The event loop Longboat's own loops run on: uvloop's where it is installed (a dependency
everywhere but Windows), else asyncio's.

Every request crosses the loop's reads, writes and callback scheduling, so the loop's own cost
is paid per message: the CLI's servers, the blocking client's loop thread and the benchmarks'
load generators all take theirs from here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on a new loop of `new_event_loop`, then close the loop."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coro)
