"""A broker with its RocketMQ 5 gRPC endpoint on a random 127.0.0.1 port, shared by a test
module, and the official Python client (`rocketmq-python-client`, the grpc extra) pointed at
it.  Each test uses its own topics and groups.

The client finds its local IP by `connect()`ing a UDP socket towards a public address (no
packet is sent, but it needs a route); the cache it keeps is pre-filled with 127.0.0.1 so
nothing here depends on the machine's network.

The client also starts its telemetry stream through grpc.aio on whichever thread handled the
first route answer, and grpc.aio asks that thread for its event loop. When that is the test's
own thread and an earlier `asyncio.run` in the same worker left it with none, the first send
fails with "failed to fetch topic route"; `_caller_has_an_event_loop` gives it one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rocketmq import ClientConfiguration, Credentials, Producer, SimpleConsumer
from rocketmq.v5.util.misc import Misc

from conftest import Cluster, start_cluster
from longboat.protocol.bodies import SubscriptionGroupConfig, TopicConfig

Misc._Misc__LOCAL_IP = "127.0.0.1"  # type: ignore[attr-defined]

_names = itertools.count(1)


class Grpc5:
    """The shared broker and helpers to make topics, groups and clients on it."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    @property
    def endpoint(self) -> str:
        assert self.cluster.broker.grpc is not None
        return f"127.0.0.1:{self.cluster.broker.grpc.port}"

    def config(self, request_timeout: int = 5) -> ClientConfiguration:
        return ClientConfiguration(self.endpoint, Credentials(), request_timeout=request_timeout)

    def topic(self, queues: int = 4) -> str:
        name = f"g5-topic-{next(_names)}"
        broker = self.cluster.broker

        async def create() -> None:
            broker.topics.create_topic(
                TopicConfig(name, read_queue_nums=queues, write_queue_nums=queues)
            )

        self.cluster.runner.run(create())
        return name

    def group(self, *, orderly: bool = False, retry_max_times: int = 16) -> str:
        name = f"g5-group-{next(_names)}"
        self.cluster.broker.subscription_groups.put(
            SubscriptionGroupConfig(
                group_name=name,
                consume_message_orderly=orderly,
                retry_max_times=retry_max_times,
            )
        )
        return name

    @contextlib.contextmanager
    def producer(self, *topics: str) -> Iterator[Producer]:
        producer = Producer(self.config(), topics)
        producer.startup()
        try:
            yield producer
        finally:
            producer.shutdown()

    @contextlib.contextmanager
    def simple_consumer(
        self, group: str, subscription: dict[str, Any], await_s: int = 2
    ) -> Iterator[SimpleConsumer]:
        consumer = SimpleConsumer(self.config(), group, subscription, await_duration=await_s)
        consumer.startup()
        try:
            yield consumer
        finally:
            consumer.shutdown()


def start_grpc5(data_dir: Path, **options: Any) -> Cluster:
    settings: dict[str, Any] = {
        "grpc_listen_port": 0,
        "grpc_min_invisible_time_mills": 1000,
        "message_delay_level": "200ms 400ms 600ms",
    }
    settings.update(options)
    return start_cluster(data_dir, **settings)


def _has_usable_event_loop() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return not asyncio.get_event_loop_policy().get_event_loop().is_closed()
        except RuntimeError:
            return False


@pytest.fixture(autouse=True)
def _caller_has_an_event_loop() -> Iterator[None]:
    """An open event loop on the test's thread for the official client (see the docstring)."""
    if _has_usable_event_loop():
        yield
        return
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@pytest.fixture(scope="module")
def grpc5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grpc5]:
    cluster = start_grpc5(tmp_path_factory.mktemp("grpc5"))
    try:
        yield Grpc5(cluster)
    finally:
        cluster.stop()


@pytest.fixture
def grpc5_factory(tmp_path: Path) -> Iterator[Callable[..., Grpc5]]:
    """Brokers of a test's own (for restarts and non-default settings)."""
    started: list[Cluster] = []

    def make(**options: Any) -> Grpc5:
        cluster = start_grpc5(tmp_path / f"store-{len(started)}", **options)
        started.append(cluster)
        return Grpc5(cluster)

    yield make
    for cluster in started:
        cluster.stop()
