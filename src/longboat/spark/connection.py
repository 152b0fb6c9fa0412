"""One lazily opened client per Python process, shared by every reader and writer in it.

Spark runs the data source in several processes (planner, source runner, executor workers),
pickling the reader and writer objects between them; sockets and event loops cannot travel,
so those objects hold only options and ask `link(namesrv)` for the process's client when they
first need the broker.  The client lives on the blocking facade's loop thread
(`LoopThread.shared()`), so Spark's synchronous calls just wait for coroutines there; a
reused executor worker keeps its connections from one task to the next.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import threading
import zlib
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from longboat.client.config import ClientConfig, parse_namesrv_addrs
from longboat.client.errors import NoRouteError
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader
from longboat.client.sync import LoopThread
from longboat.protocol.types import MessageQueue

T = TypeVar("T")

_IMPLICIT_TOPIC = re.compile(r"^(%RETRY%|%DLQ%|rmq_sys_|SCHEDULE_TOPIC_XXXX$|TBW102$)")


class BrokerLink:
    """The process's client for one name-server list; every method blocks its caller."""

    def __init__(self, namesrv: str, request_timeout: float) -> None:
        self.loop_thread = LoopThread.shared()
        # Client instances are shared per client id: one id per name-server list, so two
        # clusters used from one process never share routes.
        name = f"{os.getpid()}-spark-{zlib.crc32(namesrv.encode()):08x}"
        self.config = ClientConfig(
            parse_namesrv_addrs(namesrv), request_timeout=request_timeout, instance_name=name
        )

        async def open_reader() -> QueueReader:
            reader = QueueReader(config=self.config)
            await reader.start()
            return reader

        self.reader = self.run(open_reader())
        self._producers: dict[str, Producer] = {}
        # Kept for the life of the process (a reused worker keeps its connections), and shut
        # down at its exit, before the loop thread stops.
        atexit.register(self.close)

    def close(self) -> None:
        """Shut down the reader and the producers (at exit; bounded)."""

        async def close_all() -> None:
            producers, self._producers = list(self._producers.values()), {}
            await asyncio.gather(
                self.reader.shutdown(), *(p.shutdown() for p in producers), return_exceptions=True
            )

        with contextlib.suppress(Exception):
            self.loop_thread.run(close_all(), timeout=10)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop_thread.run(coro)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Any:
        return self.loop_thread.submit(coro)

    # ------------------------------------------------------------------ what to read

    def queues(self, topics: Iterable[str], pattern: str | None) -> list[MessageQueue]:
        """Readable queues of the topics (or of every topic matching `pattern`), sorted."""
        return self.run(self._queues(list(topics), pattern))

    async def _queues(self, topics: list[str], pattern: str | None) -> list[MessageQueue]:
        if pattern is not None:
            every = await self.reader.topics()
            topics = sorted(
                t for t in every if re.fullmatch(pattern, t) and not _IMPLICIT_TOPIC.match(t)
            )
        out: list[MessageQueue] = []
        for topic in topics:
            try:
                out.extend(await self.reader.queues(topic))
            except NoRouteError:
                if pattern is not None:
                    continue
                raise
        return sorted(out)

    def keyed(
        self, mqs: list[MessageQueue], key: str, max_num: int
    ) -> set[tuple[MessageQueue, int]] | None:
        """(queue, offset) of the messages of these queues whose KEYS hold `key` (the key
        index of every broker of their topics); None when a broker answered `max_num` of
        them, so the answer may be incomplete (brokers cap a key query, RocketMQ at 32)."""
        return self.run(self._keyed(mqs, key, max_num))

    async def _keyed(
        self, mqs: list[MessageQueue], key: str, max_num: int
    ) -> set[tuple[MessageQueue, int]] | None:
        wanted = set(mqs)
        groups = {(mq.topic, mq.broker_name): mq for mq in mqs}  # one lookup per broker
        api = self.reader.instance.api

        async def one(
            topic: str, broker: str, any_mq: MessageQueue
        ) -> set[tuple[MessageQueue, int]] | None:
            found = await api.query_message(
                await self.reader.master_addr(any_mq), topic, key, max_num=max_num
            )
            if len(found) >= max_num:
                return None
            return {(MessageQueue(topic, broker, m.queue_id), m.queue_offset) for m in found}

        hits = await asyncio.gather(*(one(t, b, mq) for (t, b), mq in groups.items()))
        if any(found is None for found in hits):
            return None
        return {(mq, o) for found in hits if found is not None for mq, o in found if mq in wanted}

    def offsets(self, mqs: Iterable[MessageQueue], at: str | int) -> dict[MessageQueue, int]:
        """Per queue: "min" (first kept), "max" (next to be written) or the first offset
        stored at or after a timestamp (ms); asked of all brokers at once."""
        return self.run(self._offsets(list(mqs), at))

    async def _offsets(self, mqs: list[MessageQueue], at: str | int) -> dict[MessageQueue, int]:
        reader = self.reader

        async def one(mq: MessageQueue) -> int:
            if at == "min":
                return await reader.min_offset(mq)
            if at == "max":
                return await reader.max_offset(mq)
            return await reader.offset_at(mq, int(at))

        values = await asyncio.gather(*(one(mq) for mq in mqs))
        return dict(zip(mqs, values, strict=True))

    # ------------------------------------------------------------------ reading

    def pull_async(self, mq: MessageQueue, offset: int, count: int, tags: str, group: str) -> Any:
        """Start one pull of up to `count` messages at `offset` (a concurrent future): a plain
        read of a range, no suspend (the range is known to exist), nothing committed."""
        return self.submit(
            self.reader.pull(
                mq,
                offset,
                group=group,
                max_msgs=count,
                expression=tags,
                decode=False,
                timeout=self.config.request_timeout,
            )
        )

    # ------------------------------------------------------------------ group offsets

    def commit_group(self, group: str, positions: dict[MessageQueue, int]) -> None:
        self.run(self._commit_group(group, positions))

    async def _commit_group(self, group: str, positions: dict[MessageQueue, int]) -> None:
        await asyncio.gather(*(self.reader.commit(group, mq, o) for mq, o in positions.items()))

    def group_offset(self, group: str, mq: MessageQueue) -> int | None:
        return self.run(self.reader.committed(group, mq))

    # ------------------------------------------------------------------ writing

    def producer(self, group: str, *, retry_times: int = 2) -> Producer:
        """A started producer of `group`, kept for the life of the process."""
        producer = self._producers.get(group)
        if producer is None:

            async def start() -> Producer:
                p = Producer(group, config=self.config, retry_times=retry_times)
                await p.start()
                return p

            producer = self._producers[group] = self.run(start())
        return producer

    def has_unique_key(self, topic: str, key: str) -> bool:
        """Whether any master of `topic` holds a message whose UNIQ_KEY is `key`."""
        return self.run(self.reader.has_unique_key(topic, key))

    def marker_queue(self, producer: Producer, topic: str) -> MessageQueue:
        """The queue whose consumer offset holds a sink's marker for `topic`: the first one
        `producer` may send to (the topic may not exist before the sink's first batch)."""
        return self.run(producer.fetch_publish_queues(topic))[0]


_links: dict[tuple[int, str, float], BrokerLink] = {}
_links_lock = threading.Lock()


def link(namesrv: str, request_timeout: float) -> BrokerLink:
    """This process's client for `namesrv`, opened on first use (also after a fork)."""
    key = (os.getpid(), namesrv, request_timeout)
    with _links_lock:
        found = _links.get(key)
        if found is None:
            found = _links[key] = BrokerLink(namesrv, request_timeout)
        return found
