"""The task helpers of the client's services, and of the dashboard, which reaches remoting
only through the client; and the poll for a state that no event announces."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from longboat.remoting.tasks import BackgroundTask, ended

__all__ = ["BackgroundTask", "ended", "poll_until"]


async def poll_until(ready: Callable[[], Awaitable[bool]], timeout: float, interval: float) -> bool:
    """Ask `ready()` every `interval` seconds until it says True (then True) or `timeout`
    seconds have passed (then False, after asking once more at the deadline or past it).

    For what the cluster does not announce (a name server's routes after a create, a group's
    progress): the caller says what to do when the time is up."""
    deadline = time.monotonic() + timeout
    while True:
        if await ready():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(interval)
