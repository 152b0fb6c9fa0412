"""A store's background thread that sleeps on a condition until its owner hands it work or
stops it: the flush service and the consume queues' spares each run one.

Invariant: `_stopping` and the work the owner hands over are read and written under `_cond`;
once `_stop_thread` returns, the thread has ended (it finishes what it had taken first).
"""

from __future__ import annotations

import threading


class WorkerThread:
    """Base of a service with one daemon thread running `_run`."""

    def __init__(self, name: str) -> None:
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def _stop_thread(self) -> None:
        """Tell the thread to stop, wake it, and wait until it has ended."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join()
