"""The producer under faults: a send rides out a broker restart shorter than its deadline."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

from conftest import Cluster
from longboat.client import ClientError, Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer

from .client_e2e import config_for, read_topic, unique


async def test_sends_ride_out_a_broker_restart(loopback_cluster: Callable[..., Cluster]) -> None:
    cluster = loopback_cluster()
    topic = unique("Restart")
    async with Admin(config=config_for(cluster.namesrv_addr)) as admin:
        await admin.create_topic(topic, queue_nums=2)
    acknowledged: list[bytes] = []
    failed: list[ClientError] = []
    stop = asyncio.Event()

    async with Producer(
        unique("pg"), config=config_for(cluster.namesrv_addr), send_timeout=10.0
    ) as producer:

        async def steady(sender: int) -> None:
            n = 0
            while not stop.is_set():
                body = f"{sender}-{n}".encode()
                n += 1
                try:
                    await producer.send(Message(topic, body))
                except ClientError as exc:
                    failed.append(exc)
                else:
                    acknowledged.append(body)
                await asyncio.sleep(0.005)

        senders = [asyncio.create_task(steady(i)) for i in range(4)]
        await asyncio.sleep(0.5)
        before = len(acknowledged)
        down_for = random.uniform(2.0, 4.0)
        await asyncio.to_thread(cluster.restart_broker, down_for)
        await asyncio.sleep(0.5)
        stop.set()
        await asyncio.gather(*senders)

    assert failed == [], f"{len(failed)} sends failed across a {down_for:.1f}s restart"
    assert before > 0 and len(acknowledged) > before
    # Nothing acknowledged is lost (a retried send may be stored twice: at least once).
    stored = await read_topic(cluster.namesrv_addr, topic, len(acknowledged))
    assert set(acknowledged) <= {m.body for m in stored}
