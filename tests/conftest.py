"""Shared fixtures: a real name server and broker on loopback, for every end-to-end test.

`loopback_cluster` is a factory. Each call starts a name server and one broker (in-process, on
their own event loop in a background thread, so both synchronous and asyncio tests can use
them) on random free 127.0.0.1 ports with a fresh data directory, and returns a `Cluster`
with `namesrv_addr`, `broker_addr` and `data_dir`. Keyword options are BrokerConfig fields
(`auto_create_topic=False` is accepted as the short form of `auto_create_topic_enable`).
Everything a test started is stopped at its teardown.

    def test_something(loopback_cluster):
        cluster = loopback_cluster(message_delay_level="100ms 100ms")
        ... ClientConfig([cluster.namesrv_addr], client_ip="127.0.0.1") ...

`cluster.restart_broker()` stops the broker and starts a new one on the same data directory
and port (a clean restart: everything acknowledged must still be there).

`loopback_broker` is the same pair started on the test's own event loop, for asyncio tests that
also reach into the broker's state (its store, tables and `put_message`) between requests:
`broker = await loopback_broker(message_delay_level="100ms")` returns the running
`BrokerController`; its name server's address is `broker.config.namesrv_addr`.

`small_disk` is a real 96 MiB filesystem (a tmpfs mounted for the test, which needs root; the
test is skipped, saying so, where mount is refused), for disk-full tests.

`rocketmq_cluster` is Apache RocketMQ itself (a name server and a broker, two JVMs started once
per session; see `peers.rocketmq`), `rocketmq5_cluster` Apache RocketMQ 5.3.3 (a name server and
a proxy in local mode hosting its broker; see `peers.rocketmq5`), `any_rocketmq` each of the two
in turn (a test requesting it runs twice), and `java_peers` the guard every test running a Java peer
program requests: it skips with the reason when LONGBOAT_SKIP_JAVA=1 and fails, saying what to
run, when `make java-peers` has not built them.

`make test` runs the suite on two pytest-xdist workers (`--dist loadgroup`); the tests that use
a RocketMQ cluster (4.9.7, 5.3.3), and those that use the SparkSession, each stay on one
worker, so a run starts each of them once, and the files of tests marked slow, java or spark
are collected first (`pytest_collection_modifyitems` below; docs/testing.md, "The project's
own suite").
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from rich.logging import RichHandler

from longboat.broker import BrokerConfig, BrokerController
from longboat.cli.runtime import PlainLogHandler
from longboat.namesrv import NameServer
from peers.ali_ons import require_node_peer
from peers.rocketmq import (
    CLIENT5_DIR,
    CLIENT_DIR,
    LMQ_SETTINGS,
    SERVER_DIR,
    RocketMQCluster,
    classpath,
    discard,
    java_skip_reason,
    start_rocketmq,
)
from peers.rocketmq5 import SERVER5_DIR, AnyRocketMQ, RocketMQ5Cluster, start_rocketmq5
from peers.tls_certs import Certificate, self_signed

# Servers the suite spawns serve gRPC on a free port (`longboat up`, which serves it on
# RocketMQ's 8081 by default; `longboat broker` then too), not on 8081, which concurrent tests
# (or the machine) may hold.
os.environ.setdefault("LONGBOAT_GRPC_LISTEN_PORT", "0")
# Likewise every 'longboat up' the suite spawns serves its dashboard on a free port, never 8080.
os.environ.setdefault("LONGBOAT_DASHBOARD_PORT", "0")

T = TypeVar("T")
START_TIMEOUT_S = 30.0
_ids = itertools.count(1)


class LoopThread:
    """An asyncio loop on a daemon thread; `run(coro)` waits for a result from any thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = START_TIMEOUT_S) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


@dataclass
class Cluster:
    """A running name server + broker pair (see the module docstring)."""

    runner: LoopThread
    namesrv: NameServer
    broker: BrokerController
    config: BrokerConfig
    data_dir: Path
    stopped: bool = field(default=False)

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.addr

    @property
    def broker_addr(self) -> str:
        return self.broker.broker_addr

    def restart_broker(self, down_for: float = 0.0) -> BrokerController:
        """Stop the broker, stay down `down_for` seconds, start it again on the same port."""
        grpc = self.broker.grpc
        self.runner.run(self.broker.stop())
        time.sleep(down_for)
        self.config = self.config.updated(listen_port=self.broker.server.port)
        if grpc is not None:
            self.config = self.config.updated(grpc_listen_port=grpc.port)
        self.broker = BrokerController(self.config)
        self.runner.run(self.broker.start())
        return self.broker

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            self.runner.run(self.broker.stop())
            self.runner.run(self.namesrv.stop())
        finally:
            self.runner.close()


def broker_config(data_dir: Path, namesrv_addr: str, **options: Any) -> BrokerConfig:
    """A broker config for tests: loopback, random port, small files, the given overrides."""
    if "auto_create_topic" in options:
        options["auto_create_topic_enable"] = options.pop("auto_create_topic")
    base: dict[str, Any] = {
        "broker_name": f"broker-{next(_ids)}",
        "listen_host": "127.0.0.1",
        "listen_port": 0,
        "broker_ip1": "127.0.0.1",
        "namesrv_addr": namesrv_addr,
        "store_path_root_dir": data_dir,
        # Segments are preallocated: small ones keep a suite of brokers off the disk's limit,
        # yet hold a 4 MiB message.
        "mapped_file_size_commit_log": 16 * 1024 * 1024,
        "flush_interval_commit_log": 50,
        # The RocketMQ 5 endpoint only where a test asks for it (grpc_listen_port=0).
        "grpc_listen_port": -1,
        # A master's HA port anywhere free: listenPort + 1 may be taken by then when a test
        # restarts a broker on the port it was given.
        "ha_listen_port": 0,
    }
    base.update(options)
    return BrokerConfig(**base)


def start_cluster(data_dir: Path, **options: Any) -> Cluster:
    runner = LoopThread()
    try:
        namesrv = NameServer("127.0.0.1", 0)
        runner.run(namesrv.start())
        config = broker_config(data_dir, namesrv.addr, **options)
        broker = BrokerController(config)
        runner.run(broker.start())
    except BaseException:
        runner.close()
        raise
    return Cluster(runner, namesrv, broker, config, data_dir)


@pytest.fixture
def loopback_cluster(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    started: list[Cluster] = []

    def make(**options: Any) -> Cluster:
        cluster = start_cluster(tmp_path / f"store-{len(started)}", **options)
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.stop()


@pytest.fixture
async def loopback_broker(
    tmp_path: Path,
) -> AsyncIterator[Callable[..., Awaitable[BrokerController]]]:
    started: list[NameServer | BrokerController] = []

    async def make(**options: Any) -> BrokerController:
        namesrv = NameServer("127.0.0.1", 0)
        await namesrv.start()
        started.append(namesrv)
        config = broker_config(tmp_path / f"broker-{len(started)}", namesrv.addr, **options)
        broker = BrokerController(config)
        started.append(broker)
        await broker.start()
        return broker

    yield make
    for server in reversed(started):
        await server.stop()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 96 MiB tmpfs, unmounted after the broker on it stopped (fixtures tear down
    in reverse: request this one before `loopback_cluster`); skipped where mount is refused."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 96 MiB tmpfs (root needed): {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


# Session fixtures that start something heavy: the tests using one run on one xdist worker.
_ONE_WORKER_FIXTURES = ("rocketmq_cluster", "rocketmq5_cluster", "spark")
# Markers of tests that start JVMs or run long. Their files run first: the scheduler hands out
# single tests in collection order, and a two-minute test begun last keeps the run going while
# the other worker has nothing left (tests/test_bench_rocketmq_compare.py, collected near the
# end, did).
_HEAVY_MARKERS = ("slow", "java", "spark")


# First: pytest-xdist's own hook (on each worker, registered after the conftests, so called
# before them) reads the groups into the node ids. xdist 3.8 writes `Item._nodeid`, which
# pytest 9 no longer reads: pyproject.toml keeps pytest below 9 so the groups reach the scheduler.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = list(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        if callspec is not None:
            # A fixture parametrized by a cluster fixture's name (`any_rocketmq`, or a test
            # module's own) stands for that cluster.
            fixtures[:0] = [p for p in callspec.params.values() if p in _ONE_WORKER_FIXTURES]
        for name in _ONE_WORKER_FIXTURES:
            if name in fixtures:
                item.add_marker(pytest.mark.xdist_group(name))
                break
    heavy = {i.path for i in items if any(i.get_closest_marker(m) for m in _HEAVY_MARKERS)}
    items.sort(key=lambda item: item.path not in heavy)  # stable: each file's order kept


@pytest.fixture(autouse=True)
def _cli_logging_undone() -> Iterator[None]:
    """A CLI command run in-process configures the root logger (a handler on stderr, at
    DEBUG with --verbose); later tests on the same worker, and the libraries they drive (py4j
    logs every command at DEBUG), must not log through it."""
    root = logging.getLogger()
    before, level = set(root.handlers), root.level
    yield
    for handler in set(root.handlers) - before:
        if isinstance(handler, RichHandler | PlainLogHandler):
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="session")
def node_peer() -> None:
    """The ali-ons Node.js peer is installed (`make node-peers`); see `require_node_peer`."""
    require_node_peer()


@pytest.fixture(scope="session")
def java_peers() -> None:
    reason = java_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    try:
        classpath(CLIENT_DIR)
        classpath(CLIENT5_DIR)
        classpath(SERVER_DIR)
        classpath(SERVER5_DIR)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def rocketmq_cluster(
    java_peers: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RocketMQCluster]:
    cluster = start_rocketmq(tmp_path_factory.mktemp("rocketmq"), broker_options=LMQ_SETTINGS)
    yield cluster
    discard(cluster)


@pytest.fixture(scope="session")
def rocketmq5_cluster(
    java_peers: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RocketMQ5Cluster]:
    cluster = start_rocketmq5(tmp_path_factory.mktemp("rocketmq5"))
    yield cluster
    discard(cluster)


@pytest.fixture(
    params=["rocketmq_cluster", "rocketmq5_cluster"], ids=["rocketmq4.9.7", "rocketmq5.3.3"]
)
def any_rocketmq(request: pytest.FixtureRequest) -> AnyRocketMQ:
    """Each Apache RocketMQ of the session in turn: a test requesting it runs against 4.9.7
    and against 5.3.3 (each on the worker that holds that cluster)."""
    cluster: AnyRocketMQ = request.getfixturevalue(request.param)
    return cluster


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    """A self-signed certificate for 127.0.0.1, made once per session (see peers.tls_certs)."""
    return self_signed(tmp_path_factory.mktemp("tls"))
