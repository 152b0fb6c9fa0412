"""RocketMQ 5.3's recall handle (`RecallMessageHandle.HandleV1`): what a send of a timer
message answers with (SendMessageResponseHeader.recallHandle, gRPC's recall_handle) and a
RECALL_MESSAGE carries back.  URL-safe base64 of `v1 <topic> <broker> <due ms + 1> <id>`
(the +1 is RocketMQ's, "consider of floor")."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

_VERSION = "v1"


@dataclass(frozen=True, slots=True)
class RecallHandle:
    topic: str
    broker_name: str
    timestamp_ms: int  # the due time + 1, as RocketMQ writes it; -1 when not a number
    message_id: str

    def encode(self) -> str:
        raw = " ".join(
            (_VERSION, self.topic, self.broker_name, str(self.timestamp_ms), self.message_id)
        )
        return base64.urlsafe_b64encode(raw.encode()).decode()

    @classmethod
    def decode(cls, handle: str) -> RecallHandle:
        """ValueError("recall handle is invalid", RocketMQ's words) when it is not one."""
        try:
            items = base64.urlsafe_b64decode(handle.encode()).decode().split(" ")
        except (binascii.Error, UnicodeError, ValueError):
            raise ValueError("recall handle is invalid") from None
        if not handle or items[0] != _VERSION or len(items) < 5:
            raise ValueError("recall handle is invalid")
        try:
            timestamp = int(items[3])
        except ValueError:
            timestamp = -1
        return cls(items[1], items[2], timestamp, items[4])
