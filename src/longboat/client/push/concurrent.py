"""Concurrent consumption: a pool of workers calls the listener on batches from any queue.

Every pulled batch is split into requests of at most `batch_max` messages and queued; one of
`workers` tasks takes each request and calls the listener (a plain function on a thread pool
of the same size, an async one on the loop).  Then:

* consumed messages leave the process queue, and its new committed offset (the lowest offset
  still pending) goes to the offset store, so a slow message holds the committed offset back
  but never blocks the messages after it;
* failed ones (RECONSUME_LATER, an exception, or past `ack_index`) are redelivered through the
  broker (clustering, see `redelivery.py`) and then count as consumed; if the broker cannot
  take them they stay in the process queue and are retried locally after `local_retry_delay`
  with their reconsume count raised — so nothing is committed past a message that was
  neither consumed nor handed back;
* in broadcasting mode there is no retry topic: failures are retried locally up to
  `max_reconsume_times`, then dropped with an error log.

Requests of a dropped queue are discarded before their listener starts (the next owner
delivers them from the committed offset); listeners already running are waited for by the
rebalance (`inflight`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Unpack

from longboat.client.consume.process_queue import ProcessQueue
from longboat.client.push.listener import (
    ConcurrentContext,
    ConcurrentListener,
    ConsumeResult,
    ConsumeServiceOptions,
    WorkerPool,
)
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Request:
    mq: MessageQueue
    pq: ProcessQueue
    msgs: list[MessageExt]


class ConcurrentConsumeService(WorkerPool[_Request]):
    def __init__(
        self,
        listener: ConcurrentListener,
        *,
        max_reconsume_times: int,
        local_retry_delay: float = 5.0,
        **options: Unpack[ConsumeServiceOptions],
    ) -> None:
        super().__init__(listener, ConsumeResult, "longboat-consume", options)
        # Listener calls running now (by id of their request) and when each started; the
        # messages of such calls already sent back by the timeout (by id of the message).
        self._running: dict[int, tuple[_Request, float]] = {}
        self._timed_out: set[int] = set()
        self.max_reconsume_times = max_reconsume_times
        self.local_retry_delay = local_retry_delay
        # Observability: messages handed back to the broker, retried locally, timed out.
        self.redelivered = 0
        self.retried_locally = 0
        self.timed_out = 0

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(), name=f"consume worker {i}")
            for i in range(self.workers)
        ]
        self._tasks.append(asyncio.create_task(self._expire_loop(), name="consume timeouts"))

    def submit(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        for i in range(0, len(msgs), self.batch_max):
            self._pending.put_nowait(_Request(mq, pq, msgs[i : i + self.batch_max]))

    # ------------------------------------------------------------------ workers

    async def _work(self) -> None:
        while True:
            request = await self._pending.get()
            if request.pq.dropped or self._results.error:
                continue
            self.inflight.begin(request.mq)
            try:
                await self._consume(request)
            except Exception:
                log.exception("consuming %s failed unexpectedly", request.mq)
            finally:
                self.inflight.end(request.mq)

    async def _consume(self, request: _Request) -> None:
        mq, pq, msgs = request.mq, request.pq, request.msgs
        context = ConcurrentContext(mq)
        self._running[id(request)] = (request, time.monotonic())
        try:
            result = await self._verdict(msgs, context, f"of {mq}")
        finally:
            del self._running[id(request)]
        if result is None:
            return  # left in the process queue: uncommitted, delivered again after a fix
        late = {id(m) for m in msgs} & self._timed_out if self._timed_out else set()
        if late:  # sent back by the timeout already: this call's result is too late
            self._timed_out -= late
            msgs = [m for m in msgs if id(m) not in late]
            if not msgs:
                return
        if pq.dropped:
            return
        acked = len(msgs) - 1 if result is ConsumeResult.SUCCESS else -1
        if context.ack_index is not None:
            acked = min(acked, context.ack_index)
        failed = msgs[acked + 1 :]
        keep = await self._hand_back(mq, failed, context)
        kept = {id(m) for m in keep}
        done = [m for m in msgs if id(m) not in kept] if keep else msgs
        self._consumed(mq, pq, pq.remove(done))
        if keep:
            self._retry_locally(mq, pq, keep)

    async def _expire_loop(self) -> None:
        """Java's cleanExpireMsg: a listener call running past `consume_timeout` has its
        messages sent back (delay level 3, as Java) and taken out of the process queue, so
        the committed offset moves on; its late result is then ignored.  Broadcasting has
        no retry topic to send them to: they are taken out all the same (logged as given up,
        like a broadcast message out of local retries), so one hung call cannot pin the
        locally stored offset for good."""
        while True:
            await asyncio.sleep(max(0.05, min(60.0, self.consume_timeout / 4)))
            now = time.monotonic()
            for request, started in list(self._running.values()):
                if now - started < self.consume_timeout:
                    continue
                sent_back = []
                for msg in request.msgs:
                    if id(msg) in self._timed_out:
                        continue
                    if self.redelivery is None or await self.redelivery.redeliver(
                        request.mq, msg, 3, self.max_reconsume_times
                    ):
                        self._timed_out.add(id(msg))
                        sent_back.append(msg)
                if sent_back and not request.pq.dropped:
                    self.timed_out += len(sent_back)
                    log.warning(
                        "listener ran over consume_timeout (%.0f s) on %d message(s) of %s: %s",
                        self.consume_timeout,
                        len(sent_back),
                        request.mq,
                        "sent back"
                        if self.redelivery is not None
                        else "given up (broadcasting has no retry topic); the offset moves on",
                    )
                    self._consumed(request.mq, request.pq, request.pq.remove(sent_back))

    async def _hand_back(
        self, mq: MessageQueue, failed: list[MessageExt], context: ConcurrentContext
    ) -> list[MessageExt]:
        """Redeliver failures through the broker; returns those to retry locally."""
        keep: list[MessageExt] = []
        for msg in failed:
            if self.redelivery is not None and await self.redelivery.redeliver(
                mq,
                msg,
                context.delay_level_when_next_consume,
                self.max_reconsume_times,
                reason=context.reason_for(msg),
            ):
                self.redelivered += 1
            elif self.redelivery is None and msg.reconsume_times >= self.max_reconsume_times:
                log.error(
                    "dropping %s of %s after %d local retries (broadcasting has no retry topic)",
                    msg.msg_id,
                    mq,
                    msg.reconsume_times,
                )
            else:
                keep.append(msg)
        return keep

    def _retry_locally(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        self.retried_locally += len(msgs)
        for msg in msgs:
            msg.reconsume_times += 1
        loop = asyncio.get_running_loop()

        def resubmit() -> None:
            self._timers.discard(timer)
            if not pq.dropped:
                self.submit(mq, pq, msgs)

        timer = loop.call_later(self.local_retry_delay, resubmit)
        self._timers.add(timer)
