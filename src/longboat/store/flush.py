"""A flush thread: makes a log durable (the commit log; the consumer-offset journal, see
offsets), with group commit under SYNC_FLUSH.

Under SYNC_FLUSH every append asks for durability up to its end offset and gets a future.
The thread takes *all* pending requests, runs one fdatasync covering everything written so
far, and resolves every request at or below the covered offset: writers that arrive while a
sync runs share the next one, so N concurrent writers cost about one sync per round, not N.
Under ASYNC_FLUSH nobody waits and the thread syncs every `interval` seconds.

Invariants:
  * requests are queued in offset order (the store queues them under its append lock);
  * a request is resolved only after a sync that started after its data was written;
  * stop() syncs once more and resolves everything still queued, so close() leaves no waiter.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable

from longboat.store.worker_thread import WorkerThread

log = logging.getLogger(__name__)


class FlushService(WorkerThread):
    def __init__(
        self, flush: Callable[[], int], interval_s: float, *, name: str = "longboat-store-flush"
    ) -> None:
        super().__init__(name)
        self._flush = flush
        self._interval = interval_s
        self._pending: list[tuple[int, concurrent.futures.Future[bool]]] = []
        # How many syncs ran and how many requests they covered (group-commit evidence).
        self.syncs = 0
        self.requests = 0
        # Hears each sync's duration in seconds, on the flush thread (metrics).
        self.on_sync: Callable[[float], None] | None = None

    def start(self) -> None:
        self._thread.start()

    def request(self, offset: int) -> concurrent.futures.Future[bool]:
        """A future resolved (True) once a sync covers the log up to `offset`."""
        fut: concurrent.futures.Future[bool] = concurrent.futures.Future()
        with self._cond:
            self._pending.append((offset, fut))
            self.requests += 1
            self._cond.notify()
        return fut

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._pending and not self._stopping:
                    self._cond.wait(self._interval)
                pending, self._pending = self._pending, []
                stopping = self._stopping
            self._sync_and_resolve(pending)
            if stopping:
                return

    def _sync_and_resolve(self, pending: list[tuple[int, concurrent.futures.Future[bool]]]) -> None:
        started = time.perf_counter()
        try:
            covered = self._flush()
        except OSError as exc:
            log.error("%s: sync failed: %s", self._thread.name, exc)
            for _, fut in pending:
                fut.set_exception(exc)
            return
        self.syncs += 1
        if self.on_sync is not None:
            self.on_sync(time.perf_counter() - started)
        late = []
        for offset, fut in pending:
            if offset <= covered:
                fut.set_result(True)
            else:  # cannot happen while requests follow their writes; never drop one
                late.append((offset, fut))
        if late:
            with self._cond:
                self._pending[:0] = late

    def stop(self) -> None:
        self._stop_thread()
