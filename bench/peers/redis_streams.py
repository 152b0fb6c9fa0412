"""Redis Streams: XADD (pipelined for batches), XREADGROUP ... BLOCK, XACK; AOF everysec.

Tuned as its users run it: redis-py parses replies with hiredis (installed with the bench
extra; redis-py picks it up by itself), and a batch's XACK travels in one pipeline with the
group's next XREADGROUP instead of a round trip of its own (the last one at close), the same
economy as Longboat's commit with the next pull.

A parked read in Redis holds a whole connection (XREADGROUP BLOCK blocks the connection), so the
``parked`` workload's K reads are K connections from one process; that is how a Redis consumer
parks K polls, and its per-connection buffers are part of the cost being measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

from bench.peers.base import Client, Fetched, System
from bench.peers.procs import HOST, ServerProcess, command_output, free_port

FIELD = b"b"
MAX_CONNECTIONS = 20_000


class RedisStreams(System):
    name = "redis"
    client_path = "bench.peers.redis_streams:RedisStreamsClient"
    binaries = ("redis-server",)
    apt_packages = ("redis-server",)

    #: Server flags beyond port/dir/log; also reported as the settings.
    FLAGS: dict[str, str] = {
        "appendonly": "yes",
        "appendfsync": "everysec",
        "save": "",
        "maxclients": "10000",
        "protected-mode": "yes",
    }

    def __init__(self) -> None:
        self._server: ServerProcess | None = None
        self._port = 0

    def start(self, workdir: Path) -> None:
        self._port = free_port()
        argv = [
            self.binary("redis-server"),
            "--port",
            str(self._port),
            "--bind",
            HOST,
            "--dir",
            str(workdir),
        ]
        argv += ["--daemonize", "no", "--logfile", ""]
        for key, value in self.FLAGS.items():
            argv += [f"--{key}", value]
        self._server = ServerProcess(argv, workdir / "redis.log", self._port)
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def endpoint(self) -> dict[str, Any]:
        return {"host": HOST, "port": self._port}

    def server_pid(self) -> int:
        assert self._server is not None
        return self._server.pid

    def version(self) -> str:
        server = command_output([self.binary("redis-server"), "--version"])
        return f"{server}; client redis-py {dist_version('redis')}"

    def settings(self) -> dict[str, str]:
        return {
            **{k: (v or '""') for k, v in self.FLAGS.items()},
            "produce": "pipeline (no MULTI) of XADD * per batch",
            "consume": "XREADGROUP COUNT n BLOCK ms >; XACK pipelined with the next read",
            "parser": _parser(),
        }


class RedisStreamsClient(Client):
    async def connect(self) -> None:
        import redis.asyncio as aioredis

        # redis-py's pool defaults to 100 connections; a parked XREADGROUP holds one each.
        self._r = aioredis.Redis(
            host=self.endpoint["host"], port=self.endpoint["port"], max_connections=MAX_CONNECTIONS
        )
        await self._r.ping()

        # Per (stream, group): entry ids read and not yet acknowledged.
        self._unacked: dict[tuple[str, str], list[bytes]] = {}

    async def close(self) -> None:
        if self._unacked:
            pipe = self._r.pipeline(transaction=False)
            for (stream, group), ids in self._unacked.items():
                pipe.xack(stream, group, *ids)
            await pipe.execute()
        await self._r.aclose()

    async def create_stream(self, stream: str, groups: Sequence[str]) -> None:
        if not groups:
            return  # XADD creates the stream
        pipe = self._r.pipeline(transaction=False)
        for g in groups:
            pipe.xgroup_create(stream, g, id="0", mkstream=True)
        await pipe.execute()

    async def delete_stream(self, stream: str) -> None:
        await self._r.delete(stream)

    async def send(self, stream: str, body: bytes) -> None:
        await self._r.xadd(stream, {FIELD: body})

    async def send_batch(self, stream: str, bodies: Sequence[bytes]) -> None:
        pipe = self._r.pipeline(transaction=False)
        for body in bodies:
            pipe.xadd(stream, {FIELD: body})
        await pipe.execute()

    async def fetch(
        self, stream: str, group: str, consumer: str, max_messages: int, block_s: float
    ) -> Fetched:
        pipe = self._r.pipeline(transaction=False)
        ids = self._unacked.pop((stream, group), None)
        if ids:
            pipe.xack(stream, group, *ids)
        block_ms = max(1, int(block_s * 1000))
        pipe.xreadgroup(group, consumer, {stream: ">"}, count=max_messages, block=block_ms)
        entries = _entries((await pipe.execute())[-1])
        return Fetched([fields[FIELD] for _, fields in entries], [eid for eid, _ in entries])

    async def ack(self, stream: str, group: str, fetched: Fetched) -> None:
        if fetched.token:
            self._unacked.setdefault((stream, group), []).extend(fetched.token)


def _parser() -> str:
    try:
        return f"hiredis {dist_version('hiredis')}"
    except PackageNotFoundError:
        return "redis-py's Python parser (hiredis not installed)"


def _entries(reply: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """XREADGROUP reply as entries, for both RESP2 (list) and RESP3 (dict) shapes."""
    if not reply:
        return []
    if isinstance(reply, dict):
        streams = list(reply.values())
        return [e for s in streams for e in (s[0] if s and isinstance(s[0], list) else s)]
    return [e for _, stream_entries in reply for e in stream_entries]
