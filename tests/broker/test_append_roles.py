"""The append path follows controller mode's role switches: a broker told it is a slave
refuses every send, one told it is master appends and waits for the replicas the SyncStateSet
names (allAckInSyncStateSet), without SYNC_MASTER's early SLAVE_NOT_AVAILABLE."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from longboat.broker.config import BrokerConfig
from longboat.broker.core.append import Appender
from longboat.store import MessageStore, PutStatus
from store.helpers import message, small_config


class RecordingReplication:
    """A master's HA server as the appender sees it: it records whom each send waited for
    and answers as told (`acknowledged`)."""

    def __init__(self) -> None:
        self.acknowledged = True
        self.waited_for: list[frozenset[int] | None] = []

    def slave_ok(self, offset: int) -> bool:
        return False  # no slave fit for a SYNC_MASTER wait: controller mode must not ask

    async def wait_replicated(
        self, offset: int, timeout: float, *, ids: frozenset[int] | None = None
    ) -> bool:
        self.waited_for.append(ids)
        return self.acknowledged


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore(small_config(tmp_path)) as s:
        yield s


def controller_mode(role: str) -> BrokerConfig:
    return BrokerConfig.load(
        env={},
        overrides=[
            ("enableControllerMode", True),
            ("controllerAddr", "127.0.0.1:9878"),
            ("allAckInSyncStateSet", True),
            ("brokerRole", role),
            ("brokerId", 0 if role != "SLAVE" else 2),
        ],
    )


async def test_a_role_switch_changes_what_a_send_gets(store: MessageStore) -> None:
    slave = controller_mode("SLAVE")
    appender = Appender(slave, store, slave.delay_levels, lambda: 1000.0, None)
    refused = appender.store_message(message())
    assert refused.status is PutStatus.SERVICE_NOT_AVAILABLE
    assert store.max_physical_offset == 0

    replication = RecordingReplication()
    in_sync = frozenset({2, 3})
    appender.role_changed(controller_mode("ASYNC_MASTER"), replication, lambda: in_sync)
    assert appender.waits_for_slaves
    stored = appender.store_message(message())
    assert stored.status is PutStatus.PUT_OK
    assert appender.must_wait(stored)
    assert (await appender.await_durable(stored)).status is PutStatus.PUT_OK
    replication.acknowledged = False
    late = await appender.await_durable(appender.store_message(message()))
    assert late.status is PutStatus.FLUSH_SLAVE_TIMEOUT
    assert replication.waited_for == [in_sync, in_sync]

    appender.role_changed(slave, None, None)
    assert not appender.waits_for_slaves
    assert appender.store_message(message()).status is PutStatus.SERVICE_NOT_AVAILABLE
