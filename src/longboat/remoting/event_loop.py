"""The event loop Longboat's own loops run on: uvloop's where it is installed (a dependency
everywhere but Windows), else asyncio's.

Every request crosses the loop's reads, writes and callback scheduling, so the loop's own cost
is paid per message: the CLI's servers and the blocking client's loop thread both take theirs
from here.
"""

from __future__ import annotations

import asyncio


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency except on Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
