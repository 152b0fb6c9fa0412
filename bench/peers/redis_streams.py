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
            "client": "redis.asyncio",
        }


class RedisStreamsBlocking(RedisStreams):
    """The same server, driven by redis-py's blocking client: the other common way to use
    Redis from Python, faster than redis.asyncio for the produce and fan-out workloads (see
    bench/README.md).  A blocking read holds its role's whole event loop, so
    the workloads that park a read while doing something else (the wake-up, K parked reads
    from one process) are not run for it."""

    name = "redis-blocking"
    client_path = "bench.peers.redis_streams:RedisStreamsBlockingClient"
    workloads = frozenset(
        {"produce_single", "produce_batch", "consume_fanout", "consume_fanout_1000"}
    )

    def settings(self) -> dict[str, str]:
        return {**super().settings(), "client": "redis-py's blocking client"}


class _StreamsClient(Client):
    """What both Redis clients share: the commands of each operation, built on a pipeline
    (no MULTI), and the ids read and not yet acknowledged."""

    def _start(self) -> None:
        # Per (stream, group): entry ids read and not yet acknowledged.
        self._unacked: dict[tuple[str, str], list[bytes]] = {}

    def _acks(self, pipe: Any) -> Any:
        for (stream, group), ids in self._unacked.items():
            pipe.xack(stream, group, *ids)
        self._unacked = {}
        return pipe

    @staticmethod
    def _groups(pipe: Any, stream: str, groups: Sequence[str]) -> Any:
        for g in groups:
            pipe.xgroup_create(stream, g, id="0", mkstream=True)
        return pipe

    @staticmethod
    def _batch(pipe: Any, stream: str, bodies: Sequence[bytes]) -> Any:
        for body in bodies:
            pipe.xadd(stream, {FIELD: body})
        return pipe

    def _read(
        self, pipe: Any, stream: str, group: str, consumer: str, max_messages: int, block_s: float
    ) -> Any:
        """The group's last XACK and its next XREADGROUP, in one pipeline."""
        ids = self._unacked.pop((stream, group), None)
        if ids:
            pipe.xack(stream, group, *ids)
        block_ms = max(1, int(block_s * 1000))
        pipe.xreadgroup(group, consumer, {stream: ">"}, count=max_messages, block=block_ms)
        return pipe

    @staticmethod
    def _fetched(replies: list[Any]) -> Fetched:
        entries = _entries(replies[-1])
        return Fetched([fields[FIELD] for _, fields in entries], [eid for eid, _ in entries])

    async def ack(self, stream: str, group: str, fetched: Fetched) -> None:
        if fetched.token:
            self._unacked.setdefault((stream, group), []).extend(fetched.token)


class RedisStreamsClient(_StreamsClient):
    """redis.asyncio, as the harness drives every system."""

    async def connect(self) -> None:
        import redis.asyncio as aioredis

        # redis-py's pool defaults to 100 connections; a parked XREADGROUP holds one each.
        self._r = aioredis.Redis(
            host=self.endpoint["host"], port=self.endpoint["port"], max_connections=MAX_CONNECTIONS
        )
        await self._r.ping()
        self._start()

    async def close(self) -> None:
        if self._unacked:
            await self._acks(self._r.pipeline(transaction=False)).execute()
        await self._r.aclose()

    async def create_stream(self, stream: str, groups: Sequence[str]) -> None:
        if groups:  # else XADD creates the stream
            await self._groups(self._r.pipeline(transaction=False), stream, groups).execute()

    async def delete_stream(self, stream: str) -> None:
        await self._r.delete(stream)

    async def send(self, stream: str, body: bytes) -> None:
        await self._r.xadd(stream, {FIELD: body})

    async def send_batch(self, stream: str, bodies: Sequence[bytes]) -> None:
        await self._batch(self._r.pipeline(transaction=False), stream, bodies).execute()

    async def fetch(
        self, stream: str, group: str, consumer: str, max_messages: int, block_s: float
    ) -> Fetched:
        pipe = self._read(
            self._r.pipeline(transaction=False), stream, group, consumer, max_messages, block_s
        )
        return self._fetched(await pipe.execute())


class RedisStreamsBlockingClient(_StreamsClient):
    """redis-py's blocking client, called straight from the role's coroutines: each call holds
    the role's event loop until Redis answers, which the produce and fan-out roles, doing one
    thing at a time, never notice (see `RedisStreamsBlocking`)."""

    async def connect(self) -> None:
        import redis

        self._r = redis.Redis(host=self.endpoint["host"], port=self.endpoint["port"])
        self._r.ping()
        self._start()

    async def close(self) -> None:
        if self._unacked:
            self._acks(self._r.pipeline(transaction=False)).execute()
        self._r.close()

    async def create_stream(self, stream: str, groups: Sequence[str]) -> None:
        if groups:  # else XADD creates the stream
            self._groups(self._r.pipeline(transaction=False), stream, groups).execute()

    async def delete_stream(self, stream: str) -> None:
        self._r.delete(stream)

    async def send(self, stream: str, body: bytes) -> None:
        self._r.xadd(stream, {FIELD: body})

    async def send_batch(self, stream: str, bodies: Sequence[bytes]) -> None:
        self._batch(self._r.pipeline(transaction=False), stream, bodies).execute()

    async def fetch(
        self, stream: str, group: str, consumer: str, max_messages: int, block_s: float
    ) -> Fetched:
        pipe = self._read(
            self._r.pipeline(transaction=False), stream, group, consumer, max_messages, block_s
        )
        return self._fetched(pipe.execute())


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
