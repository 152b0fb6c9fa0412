"""Stopping tasks this code started: a service's background task, and waiting for a task
that was cancelled here."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
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


class BackgroundTask:
    """The one long-running task of a service (a loop, a timer, a session), so every service
    starts and stops it alike: `start` runs it, `stop` cancels it and waits until it has
    ended (see `ended`), and a stopped one may be started again."""

    __slots__ = ("_task",)

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self._task = asyncio.create_task(work, name=name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await ended(task)
