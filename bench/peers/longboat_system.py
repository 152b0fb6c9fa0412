"""Longboat as a peer: `longboat up` (name server + broker in one process) and its own client.

Mapping onto the harness's operations:

* stream = a topic with one queue (a Redis stream and a JetStream subject are one ordered log);
* group = a RocketMQ consumer group; a new group reads from offset 0;
* send / batch send = the producer's SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE, awaiting the answer;
* parked read = PULL_MESSAGE with the suspend flag and `suspendTimeoutMillis` = block time
  (the broker's hold service parks it); K parked reads are K requests on one connection;
* ack = the consumed offset, committed with the group's next pull (RocketMQ's commit flag, how
  its consumers commit) and with UPDATE_CONSUMER_OFFSET at close.

Topics are not deleted (Longboat has no DELETE_TOPIC yet); every run uses fresh names.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

from bench.peers.base import Client, Fetched, System
from bench.peers.procs import HOST, ServerProcess, free_port
from longboat.bench.loadgen import ROUTE_WAIT_S, LoadOptions, Puller, client_config, unique
from longboat.client import Message, MessageQueue
from longboat.client.admin import Admin
from longboat.client.producer import Producer

GroupKey = tuple[str, str]

# A pull answers up to this many messages (RocketMQ's default cap is 32), so the batch-1,000
# fan-out row reads 1,000 per request as the peers do.
MAX_PULL = 1024
MAX_PULL_ENV = "LONGBOAT_MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY"


class LongboatSystem(System):
    name = "longboat"
    client_path = "bench.peers.longboat_system:LongboatClient"
    binaries = ()

    def __init__(self) -> None:
        self._server: ServerProcess | None = None
        self._namesrv_port = 0

    def start(self, workdir: Path) -> None:
        self._namesrv_port = free_port()
        broker_port = free_port()
        argv = [sys.executable, "-m", "longboat.cli", "up", "--data", str(workdir / "store")]
        argv += ["--namesrv-port", str(self._namesrv_port), "--broker-port", str(broker_port)]
        # Only what the peers run too: no metrics, gRPC or dashboard endpoint.
        argv += ["--metrics-port", "0", "--grpc-port", "-1", "--dashboard-port", "-1"]
        # The broker listens last (after the name server), so its port answering means both do.
        self._server = ServerProcess(
            argv, workdir / "longboat.log", broker_port, env={MAX_PULL_ENV: str(MAX_PULL)}
        )
        self._server.start(ready_timeout_s=60.0)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    def endpoint(self) -> dict[str, Any]:
        return {"namesrv": f"{HOST}:{self._namesrv_port}"}

    def server_pid(self) -> int:
        assert self._server is not None
        return self._server.pid

    def version(self) -> str:
        return (
            f"longboat {dist_version('longboat')} (CPython {platform.python_version()}, uvloop "
            f"{dist_version('uvloop')}); client longboat"
        )

    def settings(self) -> dict[str, str]:
        return {
            "flushDiskType": "ASYNC_FLUSH (flushIntervalCommitLog 500 ms)",
            "stream": "topic with 1 queue",
            "maxTransferCountOnMessageInMemory": str(MAX_PULL),
            "produce": "SEND_BATCH_MESSAGE per batch, awaiting the answer",
            "consume": "PULL_MESSAGE with suspend; offset committed with the next pull",
        }


class LongboatClient(Client):
    async def connect(self) -> None:
        opts = LoadOptions(self.endpoint["namesrv"])
        self._puller = await Puller.open(opts)
        self._producer = Producer(unique("peer_pg"), config=client_config(opts, "peer-producer"))
        self._admin = Admin(config=client_config(opts, "peer-admin"))
        await self._producer.start()
        await self._admin.start()
        self._queues: dict[str, MessageQueue] = {}
        self._next: dict[GroupKey, int] = {}
        self._acked: dict[GroupKey, int] = {}

    async def close(self) -> None:
        for (stream, group), offset in self._acked.items():
            await self._puller.commit(self._queues[stream], offset, group)
        await self._producer.shutdown()
        await self._admin.shutdown()
        await self._puller.close()

    async def _queue(self, stream: str) -> MessageQueue:
        mq = self._queues.get(stream)
        if mq is None:
            mq = self._queues[stream] = (
                await self._puller.reader.queues(stream, wait=ROUTE_WAIT_S)
            )[0]
        return mq

    async def create_stream(self, stream: str, groups: Sequence[str]) -> None:
        await self._admin.create_topic(stream, queue_nums=1)
        await self._queue(stream)

    async def delete_stream(self, stream: str) -> None:
        return None  # no DELETE_TOPIC yet: streams have fresh names per run

    async def send(self, stream: str, body: bytes) -> None:
        await self._producer.send(Message(stream, body), queue=await self._queue(stream))

    async def send_batch(self, stream: str, bodies: Sequence[bytes]) -> None:
        msgs = [Message(stream, body) for body in bodies]
        await self._producer.send_batch(msgs, queue=await self._queue(stream))

    async def fetch(
        self, stream: str, group: str, consumer: str, max_messages: int, block_s: float
    ) -> Fetched:
        mq = await self._queue(stream)
        key = (stream, group)
        committed = self._acked.pop(key, -1)
        got = await self._puller.pull(
            mq,
            self._next.get(key, 0),
            max_msgs=max_messages,
            suspend_s=block_s,
            commit=committed,
            group=group,
        )
        self._next[key] = got.next_begin_offset
        return Fetched([m.body for m in got.messages], (key, got.next_begin_offset))

    async def ack(self, stream: str, group: str, fetched: Fetched) -> None:
        key, offset = fetched.token
        self._acked[key] = offset
