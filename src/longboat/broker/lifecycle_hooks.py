"""What features hang on the broker's lifecycle, and running it: start and stop hooks, the
hooks of controller mode's master role, periodic jobs and connection-closed listeners.

The composition root (`controller.py`) decides when each kind runs; this base keeps the
lists and runs them so that one failing hook or job is logged and never stops the others.
Invariant: periodic jobs run from `_start_periodic` to `_stop_periodic`; a job added in
between starts at once, one added before starts with the others.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from longboat.remoting import Connection

log = logging.getLogger(__name__)

Hook = Callable[[], Awaitable[Any] | Any]


class LifecycleHooks:
    """The lists of hooks, jobs and listeners a broker's features add through the seam."""

    def __init__(self) -> None:
        self._start_hooks: list[Hook] = []
        self._stop_hooks: list[Hook] = []
        self._master_hooks: list[tuple[Hook, Hook]] = []
        self._periodic: list[tuple[float, Hook]] = []
        self._periodic_tasks: list[asyncio.Task[None]] = []
        self._closed_listeners: list[Callable[[Connection], None]] = []
        self._periodic_running = False

    def add_periodic(self, interval_s: float, job: Hook) -> None:
        """Run `job` (plain or async) every `interval_s` while the broker runs; failures are
        logged and the next round runs anyway."""
        self._periodic.append((interval_s, job))
        if self._periodic_running:
            self._spawn(self._every(interval_s, job))

    def add_start_hook(self, hook: Hook) -> None:
        """Run at start, after every feature is installed and before connections are accepted."""
        self._start_hooks.append(hook)

    def add_stop_hook(self, hook: Hook) -> None:
        """Run at stop (in reverse order of adding), after held pulls are answered and while
        the store is still open."""
        self._stop_hooks.append(hook)

    def add_master_hooks(self, start: Hook, stop: Hook) -> None:
        """Controller mode: `start` whenever this broker becomes master, `stop` when it stops
        being master or shuts down as master."""
        self._master_hooks.append((start, stop))

    def add_connection_closed_listener(self, listener: Callable[[Connection], None]) -> None:
        self._closed_listeners.append(listener)

    # ------------------------------------------------------------------ running them

    async def _run_start_hooks(self) -> None:
        """Start hooks in the order added; a failure fails the start."""
        for hook in self._start_hooks:
            await _maybe_await(hook())

    async def _run_stop_hooks(self) -> None:
        for hook in reversed(self._stop_hooks):
            try:
                await _maybe_await(hook())
            except Exception:
                log.exception("broker stop hook %r failed", hook)

    async def _run_master_hooks(self, starting: bool) -> None:
        hooks = self._master_hooks if starting else list(reversed(self._master_hooks))
        for start, stop in hooks:
            try:
                await _maybe_await(start() if starting else stop())
            except Exception:
                log.exception("broker master hook %r failed", start if starting else stop)

    def _spawn(self, job: Coroutine[Any, Any, None]) -> None:
        """Run `job` as a task that stop cancels with the periodic jobs."""
        self._periodic_tasks.append(asyncio.ensure_future(job))

    def _start_periodic(self) -> None:
        self._periodic_running = True
        for interval, job in self._periodic:
            self._spawn(self._every(interval, job))

    async def _stop_periodic(self) -> None:
        self._periodic_running = False
        for task in self._periodic_tasks:
            task.cancel()
        await asyncio.gather(*self._periodic_tasks, return_exceptions=True)
        self._periodic_tasks.clear()

    def _connection_closed(self, conn: Connection) -> None:
        for listener in self._closed_listeners:
            try:
                listener(conn)
            except Exception:
                log.exception("connection-closed listener %r failed", listener)

    async def _every(self, interval_s: float, job: Hook) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await _maybe_await(job())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("periodic job %r failed", job)


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value
