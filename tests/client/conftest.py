"""Fixtures of the client's end-to-end tests: a real name server and broker on loopback.

`namesrv` is the name-server address of a running name server with one broker registered
(auto-create of topics on); `namesrv_no_autocreate` the same with autoCreateTopicEnable=false.
Both come from the broker's `loopback_cluster` fixture in `tests/conftest.py`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import Cluster

ClusterFactory = Callable[..., Cluster]


@pytest.fixture
def namesrv(loopback_cluster: ClusterFactory) -> str:
    return loopback_cluster().namesrv_addr


@pytest.fixture
def namesrv_no_autocreate(loopback_cluster: ClusterFactory) -> str:
    return loopback_cluster(auto_create_topic=False).namesrv_addr


# Retry and delay levels of 100 ms each, so retry/DLQ tests take a second, not minutes.
SHORT_DELAY_LEVELS = " ".join(["100ms"] * 18)


@pytest.fixture
def namesrv_short_delays(loopback_cluster: ClusterFactory) -> str:
    return loopback_cluster(message_delay_level=SHORT_DELAY_LEVELS).namesrv_addr
