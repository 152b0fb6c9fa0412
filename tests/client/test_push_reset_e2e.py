"""A broker-driven offset reset reaches a live push consumer (RESET_CONSUMER_CLIENT_OFFSET):
what `mqadmin resetOffsetByTime` does to a running group.  The same scenario against Apache
RocketMQ's broker is in tests/java/test_longboat_client_on_rocketmq.py."""

from __future__ import annotations

from collections.abc import Callable

from conftest import Cluster

from .push_support import broker_driven_reset_restarts_a_live_group


async def test_a_live_group_restarts_its_queues_where_the_broker_reset_them(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    reset_to = await broker_driven_reset_restarts_a_live_group(
        cluster.namesrv_addr, cluster.broker_addr
    )
    assert reset_to == 3  # the first message stored after the time
