"""What applications build and get back: `Message` to send, `SendResult` for where it went.

Received messages are `longboat.protocol.message.MessageExt`, re-exported here, so one type
serves the store, the broker and the client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from longboat.protocol.codes import ResponseCode
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import KEY_SEPARATOR, Prop
from longboat.protocol.types import MessageQueue

__all__ = ["Message", "MessageExt", "MessageQueue", "SendResult", "SendStatus"]


@dataclass(slots=True)
class Message:
    """A message to send.  `keys` are indexed by the broker for lookups by key."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: list[str] | str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    # 1..18 (1 s .. 2 h with the default levels); 0 = deliver at once.
    delay_level: int = 0
    # The user flag stored with the message (Java `Message.flag`).
    flag: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.body, str):
            raise TypeError("Message.body must be bytes; encode text first")

    @property
    def key_list(self) -> list[str]:
        if not self.keys:
            return []
        if isinstance(self.keys, str):
            return [k for k in self.keys.split(KEY_SEPARATOR) if k]
        return [k for k in self.keys if k]

    def wire_properties(self) -> dict[str, str]:
        """User properties plus TAGS / KEYS / DELAY, as the broker reads them."""
        props = dict(self.properties)
        if self.tags:
            props[Prop.TAGS] = self.tags
        keys = self.key_list
        if keys:
            props[Prop.KEYS] = KEY_SEPARATOR.join(keys)
        if self.delay_level > 0:
            props[Prop.DELAY] = str(self.delay_level)
        return props


class SendStatus(Enum):
    """Stored, and how durably: only SEND_OK met every durability the broker promises."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"

    @classmethod
    def from_code(cls, code: int) -> SendStatus:
        return _STATUS_BY_CODE[code]


_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(frozen=True, slots=True)
class SendResult:
    status: SendStatus
    # The producer's UNIQ_KEY (comma-joined for a batch): what consumers see as msg_id.
    msg_id: str
    # The broker's offset id (comma-joined for a batch): finds the record by address.
    offset_msg_id: str
    message_queue: MessageQueue
    # Queue offset of the (first) stored message.
    queue_offset: int
    region_id: str | None = None
    transaction_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is SendStatus.SEND_OK
