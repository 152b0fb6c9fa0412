"""A name server and a broker in this process, on free 127.0.0.1 ports with a store of their
own, for tests: the real servers, not a stub, so what a test sees is what production does.

Both servers run on an event loop of their own, on a daemon thread, so one cluster serves
synchronous tests (the blocking client, `longboat.client.sync`) and asyncio tests alike: the
test's clients reach it over loopback TCP from whatever loop or thread they run on.  The
helpers (`wait_caught_up`, `messages`) run on that loop too; each has an `_async` twin for
asyncio tests, which must not block their own loop.

The store is small (16 MiB commit-log segments, preallocated) and flushed every 50 ms, so a
cluster starts in a fraction of a second and a suite of them stays off the disk's limits.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from longboat.broker import BrokerConfig, BrokerController
from longboat.client.admin import Admin, QueueProgress, is_retry_queue
from longboat.client.config import ClientConfig
from longboat.client.message import MessageExt
from longboat.client.queue_reader import QueueReader
from longboat.client.sync import LoopThread
from longboat.client.tasks import poll_until
from longboat.namesrv import NameServer

T = TypeVar("T")
LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 30.0
# The group `messages` pulls as: it stores no offset.
READER_GROUP = "LONGBOAT_TEST_READER"
_POLL_S = 0.05


class LongboatCluster:
    """A running name server and broker (see the module docstring).

    `namesrv` is the name server's "host:port", what clients are given; `broker_addr` the
    broker's; `data_dir` its store.  Start with `LongboatCluster.start(data_dir)` (or as a
    context manager), stop with `stop()`."""

    def __init__(self, data_dir: Path, **broker_settings: Any) -> None:
        self.data_dir = data_dir
        self._settings = broker_settings
        self._loop = LoopThread(name="longboat-test-cluster")
        self._namesrv: NameServer | None = None
        self._broker: BrokerController | None = None
        self._admin: Admin | None = None
        self._reader: QueueReader | None = None

    @classmethod
    def start(cls, data_dir: Path, **broker_settings: Any) -> LongboatCluster:
        """Start a cluster storing under `data_dir`; `broker_settings` are `BrokerConfig`
        fields (`message_delay_level="100ms 200ms"`, `auto_create_topic_enable=False`)."""
        cluster = cls(data_dir, **broker_settings)
        try:
            cluster._run(cluster._start())
        except BaseException:
            cluster.stop()
            raise
        return cluster

    async def _start(self) -> None:
        self._namesrv = NameServer(LOOPBACK, 0)
        await self._namesrv.start()
        settings: dict[str, Any] = {
            "listen_host": LOOPBACK,
            "listen_port": 0,
            "broker_ip1": LOOPBACK,
            "namesrv_addr": self._namesrv.addr,
            "store_path_root_dir": self.data_dir,
            "mapped_file_size_commit_log": 16 * 1024 * 1024,
            "flush_interval_commit_log": 50,
            "ha_listen_port": 0,
            **self._settings,
        }
        self._broker = BrokerController(BrokerConfig(**settings))
        await self._broker.start()
        self._admin = Admin(config=self.client_config())
        self._reader = QueueReader(config=self.client_config())
        await self._admin.start()
        await self._reader.start()

    def stop(self) -> None:
        """Stop the broker (it flushes and unregisters), then the name server."""
        try:
            self._run(self._stop())
        finally:
            self._loop.stop()

    async def _stop(self) -> None:
        for client in (self._reader, self._admin):
            if client is not None:
                await client.shutdown()
        for server in (self._broker, self._namesrv):
            if server is not None:
                await server.stop()
        self._reader = self._admin = self._broker = self._namesrv = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ where it is

    @property
    def namesrv(self) -> str:
        assert self._namesrv is not None, "the cluster is stopped"
        return self._namesrv.addr

    @property
    def broker_addr(self) -> str:
        assert self._broker is not None, "the cluster is stopped"
        return self._broker.broker_addr

    def client_config(self, **fields: Any) -> ClientConfig:
        """Client settings for this cluster: its name server, loopback, and offsets committed
        every 0.1 s (not 5 s) so `wait_caught_up` returns soon after a group has consumed;
        `fields` replace any `ClientConfig` field."""
        config = ClientConfig(
            [self.namesrv], client_ip=LOOPBACK, persist_consumer_offset_interval=0.1
        )
        return dataclasses.replace(config, **fields)

    # ------------------------------------------------------------------ helpers

    def wait_caught_up(self, group: str, topic: str | None = None, timeout: float = 10.0) -> None:
        """Return once `group` has committed an offset on every queue of `topic` (or of each
        topic it has offsets on) and none has a message left; AssertionError after `timeout`
        seconds, with each queue's state.  Consumers commit periodically: give them
        `client_config()` (0.1 s) or this waits their interval."""
        self._run(self.wait_caught_up_async(group, topic, timeout), timeout + START_TIMEOUT_S)

    async def wait_caught_up_async(
        self, group: str, topic: str | None = None, timeout: float = 10.0
    ) -> None:
        """`wait_caught_up` for asyncio tests."""
        await self._on_loop(self._wait_caught_up(group, topic, timeout))

    async def _wait_caught_up(self, group: str, topic: str | None, timeout: float) -> None:
        admin = self._admin
        assert admin is not None, "the cluster is stopped"
        progress: list[QueueProgress] = []

        async def caught_up() -> bool:
            rows = await admin.group_progress(group, topic, with_lag_time=False)
            progress[:] = [p for p in rows if not is_retry_queue(p.mq)]
            return bool(progress) and all(p.lag == 0 for p in progress)

        if not await poll_until(caught_up, timeout, _POLL_S):
            raise AssertionError(
                f"group {group} has not caught up on {topic or 'its topics'} within "
                f"{timeout:g}s: {_describe(progress)}"
            )

    def messages(self, topic: str) -> list[MessageExt]:
        """Every message `topic` holds now, on every queue, oldest first (by store time, then
        commit-log position)."""
        return self._run(self.messages_async(topic))

    async def messages_async(self, topic: str) -> list[MessageExt]:
        """`messages` for asyncio tests."""
        return await self._on_loop(self._messages(topic))

    async def _messages(self, topic: str) -> list[MessageExt]:
        reader = self._reader
        assert reader is not None, "the cluster is stopped"
        found: list[MessageExt] = []
        for mq in await reader.queues(topic):
            offset, end = await reader.min_offset(mq), await reader.max_offset(mq)
            while offset < end:
                result = await reader.pull(mq, offset, group=READER_GROUP, max_msgs=32)
                if not result.messages:
                    break
                found += result.messages
                offset = result.messages[-1].queue_offset + 1
        # Store time orders brokers; within one broker's millisecond, its commit log does.
        return sorted(found, key=lambda m: (m.store_timestamp, m.commit_log_offset))

    # ------------------------------------------------------------------ the loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = START_TIMEOUT_S) -> T:
        return self._loop.run(coro, timeout)

    async def _on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(self._loop.submit(coro))


def _describe(progress: list[QueueProgress]) -> str:
    if not progress:
        return "it has no offsets"
    return ", ".join(
        f"{p.mq.topic} queue {p.mq.queue_id}: "
        + ("no offset" if p.consumer_offset is None else f"{p.lag} left")
        for p in progress
    )
