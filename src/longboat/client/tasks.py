"""Waiting for tasks the client stopped itself."""

from __future__ import annotations

import asyncio
from typing import Any


async def ended(task: asyncio.Future[Any]) -> None:
    """Wait until a task this code cancelled has ended, absorbing its cancellation but never
    one aimed at the caller while it waits.

    `with suppress(CancelledError): await task` also swallows a cancellation of the caller
    (a shutdown bounded by a timeout, a Ctrl-C), which then runs on past its bound. A caller
    already being cancelled before the wait (cleanup in a `finally`) still gets to finish.
    Other exceptions of the task propagate, as from a plain await.
    """
    current = asyncio.current_task()
    before = current.cancelling() if current is not None else 0
    try:
        await task
    except asyncio.CancelledError:
        if current is not None and current.cancelling() > before:
            raise
