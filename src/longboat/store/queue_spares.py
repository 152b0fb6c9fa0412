"""Consume-queue directories made ahead of need, so a queue's first message does not wait for
the file system.

A new queue needs a directory and a first segment file (and a new topic its own directory):
mkdir, create, set the size -- file system metadata operations of 0.1-0.6 ms each on ext4
under load (allocating inodes), more than the rest of a send, and on the send path (the
event loop appends).  A thread (`longboat-queue-spares`) keeps a few spare queue
directories, each holding an empty first segment of the queues' size (sparse: no blocks
used but its first page's), and a few empty directories for new topics, under
`<consume queue root>/.spare/`; a
new queue takes them by renaming them into place (a rename allocates nothing: measured 0.08
ms against 0.46 ms for a mkdir), and the thread makes more.  When none is ready (a burst of
new queues), the queue creates its files itself, as before.

Spares left by a run are reused by the next.  The queue table ignores `.spare` (no topic
name starts with a dot).  Nothing here is made durable: a spare is empty, and a placed
queue's file is synced with its first entries (segments).
"""

from __future__ import annotations

import logging
import mmap
import os
import shutil
import threading
from pathlib import Path

from longboat.store.segments import segment_name

log = logging.getLogger(__name__)

SPARE_DIR = ".spare"
PAGE = mmap.PAGESIZE
KEEP = 32


class QueueSpares:
    def __init__(self, root: Path, segment_size: int, *, keep: int = KEEP) -> None:
        self._dir = root / SPARE_DIR
        self._segment_size = segment_size
        self._keep = keep
        self._ready: list[Path] = []  # queue directories, each with its first segment
        self._topic_dirs: list[Path] = []  # empty directories
        self._next = 0
        self._stopped = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="longboat-queue-spares", daemon=True)

    def start(self) -> None:
        """Take over the spares a previous run left (dropping any of another size), then
        start making more."""
        self._dir.mkdir(parents=True, exist_ok=True)
        for path in sorted(self._dir.iterdir()):
            number = path.name.lstrip("t")
            if number.isdigit():
                self._next = max(self._next, int(number) + 1)
            segment = path / segment_name(0)
            if segment.is_file() and segment.stat().st_size == self._segment_size:
                self._ready.append(path)
            elif path.name.startswith("t") and path.is_dir() and not any(path.iterdir()):
                self._topic_dirs.append(path)
            else:
                shutil.rmtree(path, ignore_errors=True)
        self._thread.start()

    def place(self, queue_dir: Path) -> bool:
        """Move a spare to `queue_dir` (which must not exist yet); False when none was ready
        or the move failed (the caller then creates the files itself)."""
        topic_dir = queue_dir.parent
        new_topic = not topic_dir.exists()
        with self._cond:
            if not self._ready:
                return False
            spare = self._ready.pop()
            empty = self._topic_dirs.pop() if new_topic and self._topic_dirs else None
            self._cond.notify()
        try:
            if empty is not None:
                os.rename(empty, topic_dir)
            elif new_topic:
                topic_dir.mkdir(exist_ok=True)
            os.rename(spare, queue_dir)
        except OSError as exc:
            log.warning("consume queue %s: no spare placed (%s)", queue_dir, exc)
            shutil.rmtree(spare, ignore_errors=True)
            return False
        return True

    def close(self) -> None:
        """Stop the thread and wait for it (the spares stay for the next run)."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._full() and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                for_topic = len(self._ready) >= self._keep
                path = self._dir / f"{'t' if for_topic else ''}{self._next}"
                self._next += 1
            try:
                if for_topic:
                    path.mkdir()
                else:
                    self._make(path)
            except OSError as exc:  # a full disk: new queues create their own files
                log.warning("consume queues: cannot make a spare (%s); retrying in 10 s", exc)
                with self._cond:
                    self._cond.wait(10.0)
                continue
            with self._cond:
                (self._topic_dirs if for_topic else self._ready).append(path)

    def _full(self) -> bool:
        return len(self._ready) >= self._keep and len(self._topic_dirs) >= self._keep

    def _make(self, path: Path) -> None:
        path.mkdir()
        fd = os.open(path / segment_name(0), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, self._segment_size)
            # The first page's block allocated here: the first entries' write into the map is
            # then a page-cache hit, not a block allocation inside the send.
            os.pwrite(fd, bytes(min(PAGE, self._segment_size)), 0)
        finally:
            os.close(fd)
