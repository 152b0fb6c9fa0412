"""What a pull answers: `PullStatus` and `PullResult`, public for code that reads queues directly.

Consumers hide pulls; the admin, the Spark connector and the benchmarks read queues by offset
through `ClientAPI.pull` and get these back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from longboat.protocol.message import MessageExt

__all__ = ["PullResult", "PullStatus"]


class PullStatus(Enum):
    FOUND = "FOUND"
    # Nothing at or after the offset (PULL_NOT_FOUND, after any long-poll hold).
    NO_NEW_MSG = "NO_NEW_MSG"
    # Entries were scanned but none passed the filter; pull again from next_begin_offset.
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    # The offset is outside [min, max]; next_begin_offset is where to go instead.
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclass(slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int = 0
    # Decoded, decompressed and tag-checked messages (empty when pulled with decode=False).
    messages: list[MessageExt] = field(default_factory=list)
    # The response body as received: stored records back to back, bodies still compressed.
    body: bytes = b""
