"""What the broker hands the store: one message before it has offsets or a store time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from longboat.protocol.message import MessageExt


@dataclass(slots=True)
class MessageInner:
    topic: str
    queue_id: int
    # As sent by the producer: possibly compressed, which sys_flag records.
    body: bytes
    properties: dict[str, str]
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = b"\x7f\x00\x00\x01"  # 4 or 16 bytes
    born_port: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    # Overrides the consume-queue tag code, which is otherwise the hash of TAGS: the delay
    # service stores the delivery time here so its scan needs no commit-log read.
    tags_code: int | None = None

    @classmethod
    def moved(
        cls,
        stored: MessageExt,
        topic: str,
        queue_id: int,
        properties: dict[str, str],
        *,
        reconsume_times: int | None = None,
    ) -> MessageInner:
        """A stored message re-stored elsewhere (retry, dead letter, delay delivery): the
        producer's fields travel unchanged, so ids, born time and host stay the original's."""
        return cls(
            topic=topic,
            queue_id=queue_id,
            body=stored.body,
            properties=properties,
            flag=stored.flag,
            sys_flag=stored.sys_flag,
            born_timestamp=stored.born_timestamp,
            born_host=stored.born_host,
            born_port=stored.born_port,
            reconsume_times=stored.reconsume_times if reconsume_times is None else reconsume_times,
            prepared_transaction_offset=stored.prepared_transaction_offset,
        )


@dataclass(slots=True)
class EncodedBatch:
    """A batch whose messages keep their encoded property strings (SEND_BATCH_MESSAGE).

    The broker's batch path hands the store the property bytes it will write, so no message
    of a batch becomes a dict or an object; everything but body, properties and flag is
    shared by the batch, as on the wire.
    """

    topic: str
    queue_id: int
    # Per message: body, encoded properties (as stored), flag.
    messages: list[tuple[bytes, bytes, int]]
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = b"\x7f\x00\x00\x01"  # 4 or 16 bytes
    born_port: int = 0
