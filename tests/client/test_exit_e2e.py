"""Clients never shut down: each is reported once at exit, and blocking consumers commit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from longboat.client import Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader

from .client_e2e import unique

NOT_SHUT_DOWN = "was started and never shut down"


def run_script(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_async_client_left_open_is_reported_once(namesrv: str) -> None:
    done = run_script(f"""
        import asyncio
        from longboat.client.producer import Producer

        async def main():
            producer = Producer("forgotten", namesrv_addrs="{namesrv}")
            await producer.start()

        asyncio.run(main())
    """)
    assert done.stderr.count(NOT_SHUT_DOWN) == 1, done.stderr
    assert "Producer(forgotten)" in done.stderr


async def test_blocking_consumer_left_open_commits_at_exit(namesrv: str) -> None:
    topic, group = unique("Exit"), unique("exit_group")
    async with Admin(namesrv_addrs=namesrv) as admin:
        await admin.create_topic(topic, queue_nums=1)
    async with Producer(unique("pg"), namesrv_addrs=namesrv) as producer:
        for i in range(20):
            await producer.send(Message(topic, f"m{i}".encode()))
    done = run_script(f"""
        from longboat.client import sync
        from longboat.client.consume_from import ConsumeFrom

        consumer = sync.LitePullConsumer(
            "{group}", namesrv_addrs="{namesrv}", consume_from=ConsumeFrom.FIRST_OFFSET,
            pull_batch_size=4,
        )
        consumer.start()
        consumer.assign(consumer.fetch_message_queues("{topic}"))
        polled = 0
        while polled < 12:
            polled += len(consumer.poll(timeout=5))
        print(polled)
    """)
    polled = int(done.stdout)
    assert done.stderr.count(NOT_SHUT_DOWN) == 1, done.stderr
    async with QueueReader(namesrv_addrs=namesrv) as reader:
        [mq] = await reader.queues(topic)
        assert await reader.committed(group, mq) == polled
