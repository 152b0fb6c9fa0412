"""Known systems by short name. A system whose module is absent (``longboat`` until its adapter
lands) or whose binary is missing is reported as skipped, not as an error."""

from __future__ import annotations

import importlib

from bench.peers.base import System

SYSTEMS: dict[str, str] = {
    "redis": "bench.peers.redis_streams:RedisStreams",
    "redis-blocking": "bench.peers.redis_streams:RedisStreamsBlocking",
    "nats": "bench.peers.nats_jetstream:NatsJetStream",
    "longboat": "bench.peers.longboat_system:LongboatSystem",
}


def load_system(name: str) -> System:
    """Instantiate a registered system; raise ImportError if its adapter module is absent."""
    if name not in SYSTEMS:
        raise KeyError(f"unknown system {name!r}; known: {', '.join(SYSTEMS)}")
    module, _, cls = SYSTEMS[name].partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise ImportError(f"adapter module {module} not present") from exc
        raise
    return getattr(mod, cls)()  # type: ignore[no-any-return]
