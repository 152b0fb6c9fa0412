"""`LongboatCluster`'s helpers one by one, from a synchronous and from an asyncio test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from longboat.client import Message, NoRouteError, sync
from longboat.client.consume_from import ConsumeFrom
from longboat.client.producer import Producer
from longboat.testing import LongboatCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LongboatCluster]:
    with LongboatCluster.start(tmp_path / "store") as started:
        yield started


def test_messages_of_every_queue_oldest_first(cluster: LongboatCluster) -> None:
    with sync.Admin(config=cluster.client_config()) as admin:
        admin.create_topic("Spread", queue_nums=4)
    with sync.Producer("p", config=cluster.client_config()) as producer:
        for i in range(8):
            producer.send(Message("Spread", b"%d" % i))
    stored = cluster.messages("Spread")
    assert [m.body for m in stored] == [b"%d" % i for i in range(8)]
    assert {m.queue_id for m in stored} == {0, 1, 2, 3}


def test_wait_caught_up_refuses_a_group_without_offsets_then_sees_it_catch_up(
    cluster: LongboatCluster,
) -> None:
    with sync.Producer("p", config=cluster.client_config()) as producer:
        for i in range(5):
            producer.send(Message("Work", b"%d" % i))
    with pytest.raises(AssertionError, match=r"has not caught up on Work within 0\.2s: Work queue"):
        cluster.wait_caught_up("workers", "Work", timeout=0.2)
    with pytest.raises(AssertionError, match="it has no offsets"):
        cluster.wait_caught_up("workers", timeout=0.2)

    consumer = sync.LitePullConsumer(
        "workers", config=cluster.client_config(), consume_from=ConsumeFrom.FIRST_OFFSET
    )
    consumer.subscribe("Work")
    with consumer:
        polled = 0
        while polled < 5:
            polled += len(consumer.poll(timeout=5))
        consumer.commit()
        cluster.wait_caught_up("workers", "Work")
        cluster.wait_caught_up("workers")


async def test_the_async_helpers_leave_the_test_loop_free(cluster: LongboatCluster) -> None:
    async with Producer("p", config=cluster.client_config()) as producer:
        await producer.send(Message("Async", b"one"))
    [stored] = await cluster.messages_async("Async")
    assert stored.body == b"one"
    with pytest.raises(AssertionError, match="no offset"):
        await cluster.wait_caught_up_async("nobody", "Async", timeout=0.2)


def test_broker_settings_and_addresses(tmp_path: Path) -> None:
    with LongboatCluster.start(tmp_path, auto_create_topic_enable=False) as cluster:
        assert cluster.namesrv.startswith("127.0.0.1:") and cluster.broker_addr != cluster.namesrv
        with (
            sync.Producer("p", config=cluster.client_config()) as producer,
            pytest.raises(NoRouteError, match="create the topic first"),
        ):
            producer.send(Message("NotCreated", b"x"))
