"""What the store answers: put and get results, as distinct statuses the broker maps to codes."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from enum import Enum

from longboat.protocol.ids import joined_offset_msg_ids, offset_msg_id_suffix


class PutStatus(Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    # Stored on a SYNC_MASTER, but no slave acknowledged it in time / none could.
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


@dataclass(slots=True)
class AppendedRecord:
    """Where one message landed."""

    commit_log_offset: int
    queue_offset: int
    size: int
    store_timestamp: int
    msg_id: str  # the offset message id


@dataclass(slots=True, frozen=True)
class Appended:
    """Where one append's messages landed, as the columns the store computes: a broker's
    answer to a batch needs only the first queue offset and the ids joined, so a record per
    message (`PutResult.records`) is built only for the callers that ask for one."""

    commit_log_offsets: list[int]
    queue_offsets: list[int]
    sizes: list[int]
    store_timestamp: int
    msg_id_prefix: str  # the store's host and port part of an offset id

    @property
    def end(self) -> int:
        """The log offset just past the last record (the records are in log order)."""
        return self.commit_log_offsets[-1] + self.sizes[-1]

    def joined_msg_ids(self) -> str:
        """The offset ids, comma-separated, as a send answer's msgId carries them."""
        return joined_offset_msg_ids(self.msg_id_prefix, self.commit_log_offsets)


@dataclass(slots=True)
class PutResult:
    status: PutStatus
    appended: Appended | None = None  # set when the messages were stored
    error: str | None = None
    # Under SYNC_FLUSH: resolved (True) once an fsync covers the records; the caller waits on
    # it (asyncio.wrap_future in the broker) and reports FLUSH_DISK_TIMEOUT if it is late.
    durable: concurrent.futures.Future[bool] | None = None

    @property
    def records(self) -> list[AppendedRecord]:
        """Where each message landed, in order; empty when none was stored."""
        a = self.appended
        if a is None:
            return []
        prefix, now = a.msg_id_prefix, a.store_timestamp
        return [
            AppendedRecord(phys, qoff, size, now, prefix + offset_msg_id_suffix(phys))
            for phys, qoff, size in zip(a.commit_log_offsets, a.queue_offsets, a.sizes, strict=True)
        ]

    @property
    def ok(self) -> bool:
        return self.status is PutStatus.PUT_OK

    def wait_durable(self, timeout: float) -> PutStatus:
        """Block until flushed (for plain threads and tests); the status to report."""
        if self.status is not PutStatus.PUT_OK or self.durable is None:
            return self.status
        try:
            self.durable.result(timeout)
        except concurrent.futures.TimeoutError:
            return PutStatus.FLUSH_DISK_TIMEOUT
        return PutStatus.PUT_OK


class GetStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class GetResult:
    status: GetStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    # The returned records as stored, back to back: a pull body is exactly these bytes.  Held
    # as one piece per run of records adjacent in the commit log (a batch lands as one run),
    # so a pull copies a run out of the log once instead of once per record.
    parts: list[bytes] = field(default_factory=list)
    # Each returned record's size, in order (they split `parts` into records).
    sizes: list[int] = field(default_factory=list)
    # Queue offsets of the returned records, in order.
    queue_offsets: list[int] = field(default_factory=list)
    # Commit-log offset of the last entry the read scanned (-1: none): how far behind the
    # log's end the reader is, which decides whether a slave should serve it instead.
    last_physical_offset: int = -1

    @property
    def body(self) -> bytes:
        """The records back to back, as a pull answer carries them (one piece is returned
        as it is: joining a single bytes object copies nothing)."""
        return b"".join(self.parts)

    @property
    def records(self) -> list[bytes]:
        """Each returned record on its own, for readers that handle them one by one."""
        records: list[bytes] = []
        sizes = iter(self.sizes)
        for part in self.parts:
            pos = 0
            while pos < len(part):
                size = next(sizes)
                records.append(part[pos : pos + size])
                pos += size
        return records
