"""Transactional messages (RocketMQ 5's TRANSACTION type): half messages, EndTransaction, and
the broker asking a producer about a transaction nobody ended.

A half message is stored at once in `RMQ_SYS_TRANS_HALF_TOPIC`, queue 0, with REAL_TOPIC /
REAL_QID saying where it belongs; consumers never see that topic.  COMMIT re-stores it in its
topic (as the delay services do), ROLLBACK only forgets it.  A half still open
`transactionTimeOut` ms after it was stored is checked: the broker sends
`RecoverOrphanedTransactionCommand{message, transaction_id}` down the Telemetry stream of a
producer that publishes to its topic, whose checker answers with EndTransaction (source
SERVER_CHECK).  Checks repeat every `transactionCheckInterval` ms; after
`transactionCheckMax` of them the half is rolled back, as RocketMQ discards it.

State of one half-topic offset (as data):

    OPEN --EndTransaction COMMIT--> COMMITTED (re-stored in its topic)
    OPEN --EndTransaction ROLLBACK, or checks exhausted--> ROLLED_BACK
    OPEN --timeout passed, a producer is connected--> OPEN (checked once more)

Progress is `config/transactionProgress.json` (`low`, and the ended offsets above it), written
after each end, after a commit's copy was appended; a restart rebuilds the open set from the
half queue.  The transaction id is `<half offset>:<message id>`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from longboat.broker.schedule import restored_message
from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.store import GetStatus, MessageInner, PutResult, PutStatus
from longboat.store.json_file import read_json, write_json_atomic

if TYPE_CHECKING:
    from longboat.broker.feature_host import CoreHost

log = logging.getLogger(__name__)

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
HALF_QUEUE = 0
_READ_BATCH = 256


class UnknownTransaction(Exception):
    """No open transaction has this id (ended already, or never begun here)."""


@dataclass(slots=True)
class OpenHalf:
    offset: int
    message_id: str
    topic: str
    stored_ms: int
    checks: int = 0
    next_check_ms: int = 0


# Asks a producer of `topic` about a half (its message, the transaction id); False when no
# producer of the topic is connected.
CheckSender = Callable[[str, MessageExt, str], bool]


class TransactionService:
    def __init__(
        self,
        controller: CoreHost,
        *,
        timeout_ms: int,
        check_interval_ms: int,
        check_max: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.controller = controller
        self.timeout_ms = timeout_ms
        self.check_interval_ms = check_interval_ms
        self.check_max = check_max
        self._clock = clock
        self._path = controller.config.store_path_root_dir / "config" / "transactionProgress.json"
        self._low = 0
        self._ended: set[int] = set()
        self.open: dict[int, OpenHalf] = {}

    def start(self) -> None:
        """Rebuild the open halves from the half queue and the saved progress."""
        saved = read_json(self._path) or {}
        store = self.controller.store
        self._low = max(int(saved.get("low", 0)), store.min_offset(HALF_TOPIC, HALF_QUEUE))
        self._ended = {int(o) for o in saved.get("ended", []) if int(o) >= self._low}
        offset = self._low
        while True:
            got = store.get_messages(HALF_TOPIC, HALF_QUEUE, offset, _READ_BATCH)
            if got.status is not GetStatus.FOUND:
                break
            for record, queue_offset in zip(got.records, got.queue_offsets, strict=True):
                ext = _decode(record)
                if queue_offset not in self._ended and ext is not None:
                    self.open[queue_offset] = self._half(queue_offset, ext)
            offset = got.next_begin_offset

    def _half(self, offset: int, ext: MessageExt) -> OpenHalf:
        stored = ext.store_timestamp
        return OpenHalf(
            offset,
            ext.msg_id,
            ext.properties.get(Prop.REAL_TOPIC, ""),
            stored,
            next_check_ms=stored + self.timeout_ms,
        )

    # ------------------------------------------------------------------ producing

    def prepare(self, msg: MessageInner) -> PutResult:
        """Store a half message bound for `msg.topic`; `transaction_id(result)` names it."""
        props = msg.properties
        props[Prop.REAL_TOPIC] = msg.topic
        props[Prop.REAL_QID] = str(msg.queue_id)
        props[Prop.TRAN_MSG] = "true"
        msg.topic = HALF_TOPIC
        msg.queue_id = HALF_QUEUE
        result = self.controller.store_message(msg)
        if result.status is PutStatus.PUT_OK:
            record = result.records[0]
            uniq = props.get(Prop.UNIQ_KEY, record.msg_id)
            self.open[record.queue_offset] = OpenHalf(
                record.queue_offset,
                uniq,
                props[Prop.REAL_TOPIC],
                record.store_timestamp,
                next_check_ms=record.store_timestamp + self.timeout_ms,
            )
        return result

    @staticmethod
    def transaction_id(result: PutResult, message_id: str) -> str:
        return f"{result.records[0].queue_offset}:{message_id}"

    def end(self, topic: str, transaction_id: str, commit: bool) -> PutResult | None:
        """Commit (the copy's put result) or roll back (None) an open transaction."""
        half = self._find(topic, transaction_id)
        result = None
        if commit:
            ext = self._read(half.offset)
            restored = restored_message(ext) if ext is not None else None
            if restored is None:
                raise UnknownTransaction(f"the half message of {transaction_id!r} is gone")
            result = self.controller.store_message(restored)
            if result.status is not PutStatus.PUT_OK:
                return result  # still open: the producer may try again
        self._ended_now([half.offset])
        return result

    def _find(self, topic: str, transaction_id: str) -> OpenHalf:
        try:
            raw_offset, message_id = transaction_id.split(":", 1)
            half = self.open.get(int(raw_offset))
        except ValueError:
            half = None
        if half is None or half.message_id != message_id or half.topic != topic:
            raise UnknownTransaction(
                f"no open transaction {transaction_id!r} on topic {topic!r} "
                "(ended already, or not begun on this broker)"
            )
        return half

    # ------------------------------------------------------------------ checking

    def check(self, send_check: CheckSender) -> None:
        """One round: ask about halves past their timeout; roll back the exhausted."""
        now_ms = int(self._clock() * 1000)
        exhausted = []
        for half in list(self.open.values()):
            if half.next_check_ms > now_ms:
                continue
            if half.checks >= self.check_max:
                exhausted.append(half.offset)
                continue
            ext = self._read(half.offset)
            if ext is None:
                exhausted.append(half.offset)
                continue
            if send_check(half.topic, ext, f"{half.offset}:{half.message_id}"):
                half.checks += 1
                half.next_check_ms = now_ms + self.check_interval_ms
        if exhausted:
            log.warning("transactions: rolling back %d half message(s) never ended", len(exhausted))
            self._ended_now(exhausted)

    # ------------------------------------------------------------------ internals

    def _ended_now(self, offsets: list[int]) -> None:
        for offset in offsets:
            self.open.pop(offset, None)
        self._ended.update(offsets)
        while self._low in self._ended:
            self._ended.discard(self._low)
            self._low += 1
        write_json_atomic(self._path, {"low": self._low, "ended": sorted(self._ended)})

    def _read(self, offset: int) -> MessageExt | None:
        got = self.controller.store.get_messages(HALF_TOPIC, HALF_QUEUE, offset, 1)
        if got.status is not GetStatus.FOUND or got.queue_offsets[0] != offset:
            return None
        return _decode(got.records[0])


def _decode(record: bytes | memoryview) -> MessageExt | None:
    try:
        return decode_record(record)
    except ProtocolError:
        return None


def real_view(ext: MessageExt) -> MessageExt:
    """The half as its producer sent it (its real topic), for a check command."""
    return dataclasses.replace(ext, topic=ext.properties.get(Prop.REAL_TOPIC, ext.topic))
