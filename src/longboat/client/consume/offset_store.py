"""Where a push consumer keeps its progress: the broker (clustering) or a local file
(broadcasting).

Both stores hold the latest committed offset per queue in memory, updated after every
consumed batch (cheap: a dict write), and write it out in the background every
`persist_consumer_offset_interval` (5 s), coalesced: a queue is written only when its offset
changed since the last write, however many batches it consumed meanwhile.  `persist(mqs)` writes
the given queues now and waits for the write to be confirmed: rebalance calls it before
releasing a queue, shutdown before unregistering, so the next owner starts where we stopped.

Clustering offsets are committed to the master of the queue's broker group only.  While the
master is gone (not in the routes, or its last request failed in transport) they stay in
memory, marked unwritten, and the periodic write pushes them once it answers again: nothing
consumed meanwhile is lost, and the master never sees an older offset than a slave served
past.  A failed write marks every offset of that group unwritten, since a oneway write sent
just before the failure may never have arrived.  Meanwhile each offset is also left with a
slave (a slave accepts commits, as RocketMQ's), so a member that takes a queue over while the
master is gone starts near where it was, not at the master's last copy.  Reading a committed
offset asks the master, else a slave, as Java's does.

Offsets only move forward through `update` (a late result of an older batch cannot move the
committed offset back); `reset` is the one deliberate way back (OFFSET_ILLEGAL moves).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Protocol

from longboat.client._internal.instance import ClientInstance
from longboat.client.consume_from import committed_offset
from longboat.client.errors import ClientError, ClientUsageError, NoRouteError, TransportError
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)


class OffsetStore(Protocol):
    async def read(self, mq: MessageQueue) -> int | None:
        """The stored offset of `mq`, or None when there is none (a new group or queue)."""
        ...

    def update(self, mq: MessageQueue, offset: int) -> None:
        """Record progress in memory (never backwards); written out later."""
        ...

    def reset(self, mq: MessageQueue, offset: int) -> None:
        """Record `offset` even if lower than the current one."""
        ...

    def current(self, mq: MessageQueue) -> int | None:
        """The offset in memory, persisted or not."""
        ...

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        """Write these queues' offsets now and wait for the write to be confirmed."""
        ...

    async def persist_all(self) -> None:
        """Write every changed offset (the periodic commit); failures are logged."""
        ...

    def remove(self, mq: MessageQueue) -> None:
        """Forget a released queue (after `persist`)."""
        ...

    async def close(self) -> None: ...


class _MemoryTable:
    """The in-memory half both stores share: latest offsets and what changed since written."""

    def __init__(self) -> None:
        self.offsets: dict[MessageQueue, int] = {}
        self.written: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int) -> None:
        if offset > self.offsets.get(mq, -1):
            self.offsets[mq] = offset

    def reset(self, mq: MessageQueue, offset: int) -> None:
        self.offsets[mq] = offset

    def current(self, mq: MessageQueue) -> int | None:
        return self.offsets.get(mq)

    def changed(self, mqs: Iterable[MessageQueue] | None = None) -> dict[MessageQueue, int]:
        keys = self.offsets if mqs is None else [m for m in mqs if m in self.offsets]
        return {mq: self.offsets[mq] for mq in keys if self.written.get(mq) != self.offsets[mq]}

    def remove(self, mq: MessageQueue) -> None:
        self.offsets.pop(mq, None)
        self.written.pop(mq, None)


class RemoteOffsetStore(_MemoryTable):
    """Clustering: offsets live on the broker that owns the queue (UPDATE_CONSUMER_OFFSET).

    The periodic write is oneway, like Java's: cheap, and a lost one is repeated 5 s later.
    `persist` waits for the broker's answer, because the next owner reads right after."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self.instance = instance
        self.group = group
        # Broker groups whose commits are held back (their master is gone): logged once.
        self.held: set[str] = set()
        # What was last left with a slave meanwhile, per queue (not sent again unchanged).
        self.left: dict[MessageQueue, int] = {}

    def reset(self, mq: MessageQueue, offset: int) -> None:
        """The broker moved the queue's offset (OFFSET_ILLEGAL): what it holds is no longer
        what was last written, so the offset is written again even when consumption brings it
        back to that value. (RocketMQ 5 keeps a broker-driven reset for the member's next
        pull, ignoring commits meanwhile: a member at 6 reset to 3 re-reads up to 6, and 6
        must reach the broker although 6 was written before.)"""
        super().reset(mq, offset)
        self.written.pop(mq, None)

    async def read(self, mq: MessageQueue) -> int | None:
        instance = self.instance
        try:
            addr = await self._master(mq)
        except ClientError:
            _, addr = await instance.pull_target(mq)  # a slave: the master's offsets, synced
        # Not the broker's 0 for "not found": see longboat.client.consume_from.
        try:
            return await committed_offset(instance.api, addr, self.group, mq)
        except TransportError:
            instance.pull_targets.unreachable(addr)
            raise

    async def _master(self, mq: MessageQueue) -> str:
        """The group's master, unless it is gone (TransportError: the offset is kept)."""
        instance = self.instance
        addr = await instance.find_master_addr(mq.broker_name, mq.topic)
        if instance.pull_targets.avoided(addr):
            raise TransportError(
                f"master {addr} of {mq.broker_name} did not answer lately; offset kept", addr
            )
        return addr

    async def _write(self, mq: MessageQueue, offset: int, *, oneway: bool) -> None:
        addr = await self._master(mq)
        try:
            await self.instance.api.update_consumer_offset(
                addr, self.group, mq, offset, oneway=oneway
            )
        except TransportError:
            self.instance.pull_targets.unreachable(addr)
            for other in [m for m in self.written if m.broker_name == mq.broker_name]:
                del self.written[other]
            raise
        self.written[mq] = offset

    async def _leave_with_slave(self, mq: MessageQueue, offset: int, *, oneway: bool) -> None:
        """The master is gone: leave the offset with a slave too, where a member that takes
        the queue over meanwhile reads it (the master still gets it when it returns)."""
        if self.left.get(mq) == offset:
            return
        _, addr = await self.instance.pull_target(mq)
        await self.instance.api.update_consumer_offset(addr, self.group, mq, offset, oneway=oneway)
        self.left[mq] = offset

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        for mq, offset in self.changed(mqs).items():
            try:
                await self._write(mq, offset, oneway=False)
            except (TransportError, NoRouteError):
                # The queue changes hands now (rebalance, shutdown): the next owner reads the
                # slave's copy, and pushes it to the master once it returns.
                await self._leave_with_slave(mq, offset, oneway=False)

    async def persist_all(self) -> None:
        for mq, offset in self.changed().items():
            name = mq.broker_name
            try:
                await self._write(mq, offset, oneway=True)
            except ClientError as exc:
                if name not in self.held:
                    log.warning(
                        "%s: offsets on %s kept until its master answers: %s", self.group, name, exc
                    )
                self.held.add(name)
                with contextlib.suppress(ClientError):
                    await self._leave_with_slave(mq, offset, oneway=True)
                continue
            self.left.pop(mq, None)
            if name in self.held:
                self.held.discard(name)
                log.warning("%s: the kept offsets on %s reach its master again", self.group, name)

    def remove(self, mq: MessageQueue) -> None:
        super().remove(mq)
        self.left.pop(mq, None)

    async def close(self) -> None:
        return None


class LocalFileOffsetStore(_MemoryTable):
    """Broadcasting: every member consumes every queue, so each keeps its own offsets, in a
    JSON file written atomically (temporary file, fsync, rename).

    The file is locked while the store is open: two live consumers sharing one file would
    overwrite each other's progress, so the second one is refused with a clear error."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._lock_file: IO[bytes] | None = None
        self._loaded = False

    def open(self) -> None:
        """Take the file's lock and load it; ClientUsageError if another consumer holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(self.path.with_suffix(".lock"), "ab")  # noqa: SIM115 - held until close
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise ClientUsageError(
                f"offset file {self.path} is in use by another broadcasting consumer; "
                "give each member its own instance_name or offset_store_dir"
            ) from None
        self._lock_file = lock
        if self.path.exists():
            data = json.loads(self.path.read_bytes())
            for entry in data.get("offsets", []):
                mq = MessageQueue(entry["topic"], entry["brokerName"], int(entry["queueId"]))
                self.offsets[mq] = self.written[mq] = int(entry["offset"])
        self._loaded = True

    async def read(self, mq: MessageQueue) -> int | None:
        offset = self.offsets.get(mq)
        return self.written.get(mq) if offset is None else offset

    def _write_file(self, table: dict[MessageQueue, int]) -> None:
        entries = [
            {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": o}
            for mq, o in sorted(table.items())
        ]
        data = json.dumps({"offsets": entries}, indent=1).encode()
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    async def _flush(self) -> None:
        if not self._loaded or not self.changed():
            return
        # Released queues stay in the file (their offsets are still this member's progress).
        table = dict(self.written) | dict(self.offsets)
        await asyncio.to_thread(self._write_file, table)
        self.written.update(table)

    async def persist(self, mqs: Iterable[MessageQueue]) -> None:
        await self._flush()

    async def persist_all(self) -> None:
        try:
            await self._flush()
        except OSError as exc:
            log.warning("writing offsets to %s failed: %s", self.path, exc)

    def remove(self, mq: MessageQueue) -> None:
        # Keep the written value: the file holds the member's progress on every queue it saw.
        self.offsets.pop(mq, None)

    async def close(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None
