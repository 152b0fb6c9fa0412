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


async def one_queue_holding(namesrv: str, prefix: str, count: int) -> str:
    """A new topic of one queue holding `count` messages."""
    topic = unique(prefix)
    async with Admin(namesrv_addrs=namesrv) as admin:
        await admin.create_topic(topic, queue_nums=1)
    async with Producer(unique("pg"), namesrv_addrs=namesrv) as producer:
        for i in range(count):
            await producer.send(Message(topic, f"m{i}".encode()))
    return topic


async def test_blocking_consumer_left_open_commits_at_exit(namesrv: str) -> None:
    topic, group = await one_queue_holding(namesrv, "Exit", 20), unique("exit_group")
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


async def test_async_consumer_left_open_says_what_is_lost_and_shows_no_lag(namesrv: str) -> None:
    topic, group = await one_queue_holding(namesrv, "ExitAsync", 10), unique("exit_async")
    done = run_script(f"""
        import asyncio
        from longboat.client import ClientConfig
        from longboat.client.consume_from import ConsumeFrom
        from longboat.client.push import PushConsumer

        async def main():
            got = asyncio.Queue()
            # No periodic commit before the exit (a pull may still carry one).
            config = ClientConfig(["{namesrv}"], persist_consumer_offset_interval=600)
            consumer = PushConsumer(
                "{group}", config=config, consume_from=ConsumeFrom.FIRST_OFFSET
            )
            consumer.subscribe("{topic}")
            consumer.register_listener(lambda msgs, ctx: [got.put_nowait(m) for m in msgs])
            await consumer.start()
            for _ in range(10):
                await got.get()
            print("consumed 10")

        asyncio.run(main())
    """)
    assert done.stdout == "consumed 10\n"
    # One report, of the consumer the script made (not of the producer it uses inside), with
    # what is lost.
    assert done.stderr.count(NOT_SHUT_DOWN) == 1, done.stderr
    assert "PushConsumer(" in done.stderr and "CLIENT_INNER_PRODUCER" not in done.stderr
    assert "is not committed and will be delivered again" in done.stderr
    async with Admin(namesrv_addrs=namesrv) as admin:
        progress = await admin.group_progress(group, topic)
        members, lag = await admin.group_summary(group)
    assert members == 0
    if all(p.consumer_offset is None for p in progress):
        assert lag is None  # no lag is known, and 0 would claim all 10 consumed
    else:
        assert lag == sum(p.lag or 0 for p in progress)
