"""Helpers for the client's end-to-end tests: unique names and reading a topic back."""

from __future__ import annotations

import asyncio
import itertools
import os

from longboat.client import ClientConfig, MessageExt, NoRouteError
from longboat.client.consume_from import ConsumeFrom
from longboat.client.lite_pull import LitePullConsumer

_names = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_names)}"


def config_for(namesrv: str, name: str | None = None) -> ClientConfig:
    return ClientConfig([namesrv], client_ip="127.0.0.1", instance_name=name or unique("client"))


async def read_topic(
    namesrv: str, topic: str, count: int, timeout: float = 20.0
) -> list[MessageExt]:
    """Every message of `topic` from the first offset, until `count` arrived (or timeout).

    A topic the broker creates on its own (a DLQ on the first dead letter) reaches the name
    server a moment later: until then, asking for its route again is the only way to learn."""
    consumer = LitePullConsumer(
        unique("reader"),
        config=config_for(namesrv),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        auto_commit=False,
        pull_batch_size=32,
    )
    await consumer.start()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while True:
            try:
                consumer.assign(await consumer.fetch_message_queues(topic))
                break
            except NoRouteError:
                if loop.time() >= deadline:
                    raise
                await asyncio.sleep(0.05)
        got: list[MessageExt] = []
        while len(got) < count and loop.time() < deadline:
            got += await consumer.poll(timeout=min(1.0, deadline - loop.time()))
        return got
    finally:
        await consumer.shutdown()
