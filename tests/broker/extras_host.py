"""A stand-in composition root for the extras' tests until the broker controller lands: a real
store and a real remoting server on loopback with only the extras installed.  It offers what
the extras use from the controller, with the same names."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from longboat.broker import admin, locks, lookups, retry, schedule
from longboat.broker.delay_levels import DelayLevels, reroute_delayed
from longboat.broker.subscription_groups import SubscriptionGroupTable
from longboat.protocol.bodies import TopicConfig, TopicConfigSerializeWrapper
from longboat.remoting import RemotingClient, RemotingServer, Router
from longboat.store import MessageInner, MessageStore, PutResult, PutStatus, StoreConfig


@dataclass
class HostConfig:
    broker_name: str = "broker-a"
    broker_cluster_name: str = "DefaultCluster"
    message_delay_level: str = "100ms 200ms 300ms 400ms 500ms"


class Topics:
    def __init__(self, store: MessageStore) -> None:
        self.table = store.topic_configs

    def _ensure(self, name: str, queue_nums: int = 1) -> TopicConfig:
        cfg = self.table.get(name)
        if cfg is None:
            cfg = TopicConfig(name, queue_nums, queue_nums)
            self.table.put(cfg)
        return cfg

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(self.table.all(), self.table.data_version)

    def ensure_retry_topic(self, group: str, queue_nums: int = 1) -> TopicConfig:
        return self._ensure(f"%RETRY%{group}", queue_nums)

    def ensure_dlq_topic(self, group: str) -> TopicConfig:
        return self._ensure(f"%DLQ%{group}")

    def create_topic(self, config: TopicConfig) -> None:
        self.table.put(config)


class ExtrasHost:
    def __init__(self, root: Path, **config: Any) -> None:
        self.config = HostConfig(**config)
        self.delay_levels = DelayLevels.parse(self.config.message_delay_level)
        self.store = MessageStore(
            StoreConfig(root, commit_log_segment_size=1 << 20, index_hash_slots=1024,
                        index_max_entries=4096),
            tags_code_resolver=self.delay_levels.tags_code_of,
        )  # fmt: skip
        self.router = Router("broker")
        self.server = RemotingServer(self.router)
        self.topics = Topics(self.store)
        self.offsets = self.store.offsets
        self.subscription_groups = SubscriptionGroupTable(
            root / "config" / "subscriptionGroup.json"
        )
        self.registrations = 0
        self._start: list[Callable[[], object]] = []
        self._stop: list[Callable[[], object]] = []
        self._periodic: list[tuple[float, Callable[[], object]]] = []
        for feature in (retry, schedule, locks, lookups, admin):
            feature.install(self)  # type: ignore[arg-type]

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def add_start_hook(self, hook: Callable[[], object]) -> None:
        self._start.append(hook)

    def add_stop_hook(self, hook: Callable[[], object]) -> None:
        self._stop.append(hook)

    def add_periodic(self, interval: float, job: Callable[[], object]) -> None:
        self._periodic.append((interval, job))

    async def register_now(self) -> None:
        self.registrations += 1

    async def put_message(self, msg: MessageInner) -> PutResult:
        reroute_delayed(msg, self.delay_levels, int(time.time() * 1000))
        result = self.store.put_message(msg)
        if result.durable is not None:
            try:
                await asyncio.wait_for(asyncio.wrap_future(result.durable), 5)
            except TimeoutError:
                return PutResult(PutStatus.FLUSH_DISK_TIMEOUT, result.records)
        return result

    async def start(self) -> None:
        self.store.open()
        self.subscription_groups.load()
        await self.server.start()
        for hook in self._start:
            hook()

    async def stop(self) -> None:
        await self.server.close()
        for hook in self._stop:
            done = hook()
            if isinstance(done, Awaitable):
                await done
        self.store.close()

    async def wait_queue(self, topic: str, queue_id: int, count: int, timeout: float = 20) -> None:
        """Until `topic`/`queue_id` holds `count` messages (event-driven: arrival listener)."""
        arrived = asyncio.Event()

        def listener(t: str, q: int, *_: object) -> None:
            if (t, q) == (topic, queue_id):
                arrived.set()

        self.store.add_arrival_listener(listener)
        async with asyncio.timeout(timeout):
            while self.store.max_offset(topic, queue_id) < count:
                arrived.clear()
                await arrived.wait()


@pytest.fixture
async def extras(tmp_path: Path) -> AsyncIterator[ExtrasHost]:
    host = ExtrasHost(tmp_path / "store")
    await host.start()
    yield host
    await host.stop()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    yield c
    await c.close()
