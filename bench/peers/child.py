"""Entry point of a role process: build the system's client, run one role, report the result.

Role processes are started with the ``spawn`` method so each is a fresh interpreter with its own
event loop (uvloop when installed, for every system alike) and nothing inherited from the runner.
"""

from __future__ import annotations

import asyncio
import importlib
import traceback
from typing import Any

from bench.peers.base import Client


def load_client(path: str, endpoint: dict[str, Any]) -> Client:
    module, _, name = path.partition(":")
    cls = getattr(importlib.import_module(module), name)
    return cls(endpoint)  # type: ignore[no-any-return]


async def _run(role: str, client_path: str, endpoint: dict[str, Any], kwargs: dict[str, Any]):
    from bench.peers.roles import ROLES

    client = load_client(client_path, endpoint)
    await client.connect()
    try:
        return await ROLES[role](client, **kwargs)
    finally:
        await client.close()


def event_loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def role_main(
    tag: str,
    role: str,
    client_path: str,
    endpoint: dict[str, Any],
    kwargs: dict[str, Any],
    results: Any,
) -> None:
    """Run ``role`` and put ``(tag, "ok", result)`` or ``(tag, "error", traceback)``."""
    try:
        if event_loop_name() == "uvloop":
            import uvloop

            result = uvloop.run(_run(role, client_path, endpoint, kwargs))
        else:
            result = asyncio.run(_run(role, client_path, endpoint, kwargs))
        results.put((tag, "ok", result))
    except BaseException:
        results.put((tag, "error", traceback.format_exc()))
