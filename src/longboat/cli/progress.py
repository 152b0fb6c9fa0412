"""Progress bars that appear only for work that takes more than a second.

A bar is drawn on stderr (stdout stays clean for pipes) and only on a terminal; quick
commands and scripts see no bar at all.  States: waiting (counting, nothing drawn) → shown
(after `DELAY_S`, on the next `advance`) → closed (the final bar stays on screen).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from types import TracebackType
from typing import TypeVar

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from longboat.cli.runtime import err_console

T = TypeVar("T")
DELAY_S = 1.0


class LateProgress:
    def __init__(self, description: str, total: float | None, *, show: bool = True) -> None:
        """`show=False` keeps the bar hidden (e.g. while data is printed to the terminal)."""
        label = TextColumn("{task.description}")
        columns = (
            [label, BarColumn(), MofNCompleteColumn(), TaskProgressColumn(), TimeRemainingColumn()]
            if total is not None
            else [SpinnerColumn(), label, MofNCompleteColumn()]
        )
        self._progress = Progress(*columns, TimeElapsedColumn(), console=err_console)
        self._task = self._progress.add_task(description, total=total)
        self._enabled = show and err_console.is_terminal
        self._shown = False
        self._since = time.monotonic()

    def advance(self, amount: float = 1) -> None:
        self._progress.advance(self._task, amount)
        if self._enabled and not self._shown and time.monotonic() - self._since > DELAY_S:
            self._shown = True
            self._progress.start()

    def __enter__(self) -> LateProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._shown:
            self._progress.stop()


async def gather_with_progress(description: str, awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """`asyncio.gather`, with a bar counting completions once it takes over a second."""
    with LateProgress(description, len(awaitables)) as bar:

        async def counted(awaitable: Awaitable[T]) -> T:
            result = await awaitable
            bar.advance()
            return result

        return list(await asyncio.gather(*(counted(a) for a in awaitables)))
