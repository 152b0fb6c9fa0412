"""What the store answers: put and get results, as distinct statuses the broker maps to codes."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from enum import Enum


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


@dataclass(slots=True)
class PutResult:
    status: PutStatus
    records: list[AppendedRecord] = field(default_factory=list)
    error: str | None = None
    # Under SYNC_FLUSH: resolved (True) once an fsync covers the records; the caller waits on
    # it (asyncio.wrap_future in the broker) and reports FLUSH_DISK_TIMEOUT if it is late.
    durable: concurrent.futures.Future[bool] | None = None

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
    # Whole stored records, exactly the bytes a pull body carries, back to back.
    records: list[bytes | memoryview] = field(default_factory=list)
    # Queue offsets of the returned records, in order.
    queue_offsets: list[int] = field(default_factory=list)
    # Commit-log offset of the last entry the read scanned (-1: none): how far behind the
    # log's end the reader is, which decides whether a slave should serve it instead.
    last_physical_offset: int = -1

    @property
    def message_count(self) -> int:
        return len(self.records)

    @property
    def total_bytes(self) -> int:
        return sum(len(r) for r in self.records)
