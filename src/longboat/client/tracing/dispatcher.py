"""The trace writer: records queued by the send and consume paths, sent in batches off them.

Java's `AsyncTraceDispatcher`, in the same shape: `append` only puts a record in a bounded
queue (a full queue drops the record and counts it in `dropped`: a trace is never worth
slowing or failing a send), and a task on the client's loop takes what is queued every
`flush_interval`, joins the records into trace messages of at most `max_body` bytes, keyed
by the traced messages' ids and keys, and sends each with its own producer.  A trace send
that fails is logged and counted in `failed`; nothing retries it.

Invariants:
* `append` never blocks and never raises; it may run on any thread (a plain-function
  listener runs on the consumer's pool), so the queue is a `deque`, whose appends and pops
  are atomic, bounded by the length check (which may overshoot by the number of threads).
* `close` writes everything appended before it was called, then stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from longboat.client.errors import ClientError
from longboat.client.message import Message
from longboat.protocol.trace import TraceRecord, encode_record

log = logging.getLogger(__name__)

# Java's queue bound (2048 contexts), its flush period (about 500 ms) and the body size it
# sends (the trace producer's 128 000-byte limit less a 10 000-byte margin).
DEFAULT_CAPACITY = 2048
DEFAULT_FLUSH_INTERVAL = 0.5
DEFAULT_MAX_BODY = 118_000

SendTrace = Callable[[Message], Awaitable[Any]]


class TraceDispatcher:
    def __init__(
        self,
        send: SendTrace,
        topic: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.topic = topic
        self.capacity = capacity
        self.flush_interval = flush_interval
        self.max_body = max_body
        self._send = send
        self._queue: deque[TraceRecord] = deque()
        self._task: asyncio.Task[None] | None = None
        # Observability: records dropped on a full queue, records written, trace sends failed.
        self.dropped = 0
        self.written = 0
        self.failed = 0

    def append(self, record: TraceRecord) -> None:
        """Queue a record (any thread; never blocks): dropped and counted when full."""
        if len(self._queue) >= self.capacity:
            self.dropped += 1
            return
        self._queue.append(record)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"trace writer {self.topic}")

    async def close(self) -> None:
        """Stop the periodic flush and write what is queued."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.flush()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            await self.flush()

    async def flush(self) -> None:
        """Send every queued record, in messages of at most `max_body` bytes."""
        queue = self._queue
        while queue:
            body: list[str] = []
            keys: dict[str, None] = {}
            size = 0
            while queue and size < self.max_body:
                record = queue.popleft()
                text = encode_record(record)
                body.append(text)
                size += len(text)
                keys[record.msg_id] = None
                if record.keys:
                    keys.update(dict.fromkeys(record.keys.split(" ")))
            count = len(body)
            keys.pop("", None)
            message = Message(self.topic, "".join(body).encode(), keys=list(keys))
            try:
                await self._send(message)
            except ClientError as exc:
                self.failed += 1
                log.warning("%d trace record(s) for %s not written: %s", count, self.topic, exc)
            else:
                self.written += count
