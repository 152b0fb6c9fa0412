"""One SparkSession for the whole test session, and a two-broker cluster Spark can reach.

Spark runs the data source in Python processes of its own, so the brokers must be real TCP
servers: the shared `start_cluster` helper runs a name server and a broker on a loop thread
in this process, and a second broker joins the same name server (the "two brokers" cases).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import Cluster, broker_config, start_cluster
from longboat.broker import BrokerController
from longboat.client import ClientConfig
from longboat.client.message import Message
from longboat.client.sync import Admin, Producer
from spark.spark_session import build_session


@dataclass
class SparkCluster:
    """The brokers Spark tests read from: the session's two, or one test's own (`second`
    None)."""

    cluster: Cluster
    second: BrokerController | None = None

    @property
    def namesrv(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def broker_names(self) -> list[str]:
        assert self.second is not None, "a cluster of one broker"
        return sorted([self.cluster.config.broker_name, self.second.config.broker_name])

    def client_config(self) -> ClientConfig:
        return ClientConfig([self.namesrv], client_ip="127.0.0.1")

    def admin(self) -> Admin:
        """A blocking admin (use it as a context manager)."""
        return Admin(config=self.client_config())

    def new_topic(self, queues: int = 2, *, both_brokers: bool = False) -> str:
        """A fresh topic with `queues` queues on the first broker (or on both)."""
        topic = f"t-{uuid.uuid4().hex[:10]}"
        cluster = None if both_brokers else self.cluster.config.broker_cluster_name
        with Admin(config=self.client_config()) as admin:
            admin.create_topic(topic, queue_nums=queues, cluster=cluster)
        return topic

    def produce(
        self,
        topic: str,
        count: int,
        *,
        tags: Callable[[int], str | None] = lambda i: None,
        body: Callable[[int], bytes] = lambda i: f"m{i}".encode(),
    ) -> None:
        """`count` messages spread round robin over the topic's queues (one send each)."""
        with Producer(config=self.client_config()) as producer:
            for i in range(count):
                producer.send(Message(topic, body(i), tags=tags(i), keys=f"k{i}"))


def load(reader: Any, namesrv: str, **options: str) -> Any:
    """`reader` (spark.read or spark.readStream) of format longboat with these options."""
    reader = reader.format("longboat").option("namesrv", namesrv)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    root = tmp_path_factory.mktemp("spark-brokers")
    cluster = start_cluster(root / "a", broker_name="spark-a")
    # Its own cluster name, so topics can be created on the first broker alone.
    config = broker_config(
        root / "b", cluster.namesrv_addr, broker_name="spark-b", broker_cluster_name="spark-b"
    )
    second = BrokerController(config)
    cluster.runner.run(second.start())
    try:
        yield SparkCluster(cluster, second)
    finally:
        cluster.runner.run(second.stop())
        cluster.stop()


@pytest.fixture
def expired_head(loopback_cluster: Callable[..., Cluster]) -> tuple[str, str, str]:
    """A one-queue topic of 60 messages whose first ones retention has deleted: (name
    server, topic, startingOffsets JSON asking for offset 0)."""
    cluster = loopback_cluster(mapped_file_size_commit_log=4096, file_reserved_time=0.0)
    sc = SparkCluster(cluster)
    topic = sc.new_topic(queues=1)
    sc.produce(topic, 60, body=lambda i: b"x" * 200)

    async def expire() -> int:
        cluster.broker.store.flush()
        return cluster.broker.store.delete_expired(force=True)

    assert cluster.runner.run(expire()) > 0
    start = json.dumps({topic: {f"{cluster.config.broker_name}:0": 0}})
    return cluster.namesrv_addr, topic, start


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    session = build_session("local[2]", scratch=tmp_path_factory.mktemp("spark-scratch"))
    from longboat.spark import register

    register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")
