"""Transactional messages for both protocols, as RocketMQ 4.x keeps them: half messages,
decisions recorded as op records, and the broker's check-back.

A producer's transactional send is stored as a *half* in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0
with its real topic and queue in REAL_TOPIC / REAL_QID (`half_messages`), so no consumer
sees it: remoting sends carry `TRAN_MSG=true` (the send path re-addresses them), gRPC sends of
type TRANSACTION come through `prepare`.  The producer runs its local transaction and ends it —
END_TRANSACTION (37) over remoting (`install`), EndTransaction over gRPC (`end`):

| decision | what the broker stores                                                          |
|----------|---------------------------------------------------------------------------------|
| COMMIT   | the real message (topic and queue restored, COMMIT sys flag), then an op record |
| ROLLBACK | an op record                                                                    |
| UNKNOWN  | nothing: the half stays undecided                                               |

An *op record* is a message in `RMQ_SYS_TRANS_OP_HALF_TOPIC` queue 0 whose body is the
half's queue offset (tag `d`, RocketMQ's REMOVETAG).  Each check-back round that reaches an
undecided half also leaves a *check record* there (tag `c`, same body) — where RocketMQ
re-appends the half with its TRANSACTION_CHECK_TIMES raised.  These records are the only
durable transaction state: at start the broker reads them back (`load`), so a half decided
before a restart is neither delivered again nor checked again, and an undecided one is
checked on with the count it had, so `transactionCheckMax` holds across restarts.

State (as data): `cursor` — every half below it is decided; `decided` — decided halves at or
past the cursor; `checks` — check-backs made per undecided half, restored from the check
records at start.  A half
moves UNDECIDED → DECIDED once, by the first commit or rollback (from the producer or from
its answer to a check-back) or by being discarded, all in-line on the event loop; a later
decision for it is answered and ignored, so none is ever applied twice.

Check-back: every `transactionCheckInterval` ms, each undecided half older than
`transactionTimeOut` ms (or its CHECK_IMMUNITY_TIME_IN_SECONDS) is offered to the checkers
in turn until one reaches a producer — remoting's CHECK_TRANSACTION_STATE to a live member
of the half's producer group (PGROUP), gRPC's RecoverOrphanedTransactionCommand to a
producer of its topic — whose answer ends it.  Every round counts, reached or not (as
RocketMQ); after `transactionCheckMax` of them the half is discarded: copied to
`TRANS_CHECK_MAX_TIME_TOPIC` (kept for an operator) and given an op record.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Protocol

from longboat.broker.core.append import Appender
from longboat.broker.core.half_messages import TYPE_MASK, half_message
from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.feature_host import FeatureHost
from longboat.broker.state.topics import TopicManager
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import (
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
)
from longboat.protocol.types import PERM_READ_WRITE
from longboat.store import MessageInner, PutResult, PutStatus


class TransactionHost(FeatureHost, Protocol):
    """What the service needs from the broker (the controller is one): a feature's host
    with the whole topic table, the clock and the append path; typed here rather than as
    the core host, which the core sits below."""

    @property
    def topics(self) -> TopicManager: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def appender(self) -> Appender: ...


log = logging.getLogger(__name__)

_OP_TAG = "d"  # RocketMQ's TransactionalMessageUtil.REMOVETAG
_CHECK_TAG = "c"
_READ_BATCH = 32
COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE

# Offer a check-back for `half` (shown with its real topic), named `transaction_id`, to a
# producer; False when no producer this checker knows of can be reached.
Checker = Callable[[MessageExt, str], bool]


class TransactionService:
    def __init__(self, controller: TransactionHost) -> None:
        self.controller = controller
        self.cursor = 0
        self.decided: set[int] = set()
        self.checks: dict[int, int] = {}
        self.checkers: list[Checker] = []
        self.discarded = 0

    def add_checker(self, checker: Checker) -> None:
        """A way to reach producers (remoting, gRPC); tried in the order added."""
        self.checkers.append(checker)

    # ------------------------------------------------------------------ recovery

    def load(self) -> None:
        """Read the op and check records back (start): every half an op record names is
        decided; the others have as many check-backs behind them as check records."""
        store = self.controller.store
        offset = store.min_offset(TRANS_OP_HALF_TOPIC, 0)
        end = store.max_offset(TRANS_OP_HALF_TOPIC, 0)
        checks: dict[int, int] = {}
        while offset < end:
            got = store.get_messages(TRANS_OP_HALF_TOPIC, 0, offset, _READ_BATCH)
            for record in got.records:
                try:
                    op = decode_record(record)
                    half_offset = int(op.body)
                except (ProtocolError, ValueError):
                    log.warning("ignoring an op record whose body is not a half offset")
                    continue
                if op.properties.get(Prop.TAGS) == _CHECK_TAG:
                    checks[half_offset] = checks.get(half_offset, 0) + 1
                else:
                    self.decided.add(half_offset)
            if got.next_begin_offset <= offset:
                break
            offset = got.next_begin_offset
        self.cursor = store.min_offset(TRANS_HALF_TOPIC, 0)
        self._advance()
        self.checks = {o: n for o, n in checks.items() if not self.is_decided(o)}
        pending = len(self.undecided())
        if pending:
            log.info("%d transaction half message(s) undecided at start", pending)

    def _advance(self) -> None:
        while self.cursor in self.decided:
            self.decided.discard(self.cursor)
            self.cursor += 1
        self.decided = {o for o in self.decided if o >= self.cursor}

    def is_decided(self, half_offset: int) -> bool:
        return half_offset < self.cursor or half_offset in self.decided

    def undecided(self) -> list[int]:
        """Half offsets still waiting for a decision."""
        end = self.controller.store.max_offset(TRANS_HALF_TOPIC, 0)
        return [o for o in range(self.cursor, end) if o not in self.decided]

    # ------------------------------------------------------------------ gRPC

    def prepare(self, msg: MessageInner) -> PutResult:
        """Store a half bound for `msg.topic` (gRPC); `transaction_id(result, id)` names it."""
        msg.properties[Prop.TRAN_MSG] = "true"
        return self.controller.appender.store_message(half_message(msg))

    @staticmethod
    def transaction_id(result: PutResult, message_id: str) -> str:
        return f"{result.records[0].queue_offset}:{message_id}"

    def end(self, topic: str, transaction_id: str, commit: bool) -> PutResult | None:
        """Commit (the real message's put result) or roll back (None) an undecided half named
        by its gRPC transaction id; raises Refusal (UNKNOWN_TRANSACTION) when no undecided half has
        this id (decided already, or never begun on this broker)."""
        raw_offset, _, message_id = transaction_id.partition(":")
        half = (
            self.controller.store.message_at(TRANS_HALF_TOPIC, 0, int(raw_offset))
            if raw_offset.isdigit()
            else None
        )
        if (
            half is None
            or self.is_decided(half.queue_offset)
            or half.properties.get(Prop.REAL_TOPIC) != topic
            or half.properties.get(Prop.UNIQ_KEY, half.msg_id) != message_id
        ):
            raise Refusal(
                Reason.UNKNOWN_TRANSACTION,
                f"no open transaction {transaction_id!r} on topic {topic!r} "
                "(ended already, or not begun on this broker)",
            )
        results = self.decide(half, COMMIT if commit else ROLLBACK)
        return results[0] if commit else None

    # ------------------------------------------------------------------ deciding

    def decide(self, half: MessageExt, decision: int) -> list[PutResult]:
        """Apply COMMIT or ROLLBACK to an undecided half, in-line: the real message's put
        (commit only) then the op record's.  A commit whose real message cannot be stored
        leaves the half undecided and returns only that failed put."""
        results: list[PutResult] = []
        if decision == COMMIT:
            result = self.controller.appender.store_message(_committed(half))
            if result.status is not PutStatus.PUT_OK:
                return [result]
            results.append(result)
        results.append(self._record_decision(half))
        return results

    def _record(self, half: MessageExt, tag: str) -> PutResult:
        """An op (`_OP_TAG`) or check (`_CHECK_TAG`) record naming `half`."""
        return self.controller.appender.store_message(
            MessageInner(
                topic=TRANS_OP_HALF_TOPIC,
                queue_id=0,
                body=str(half.queue_offset).encode(),
                properties={Prop.TAGS: tag},
                born_timestamp=int(self.controller.clock() * 1000),
                born_host=half.born_host,
            )
        )

    def _record_decision(self, half: MessageExt) -> PutResult:
        offset = half.queue_offset
        result = self._record(half, _OP_TAG)
        self.decided.add(offset)
        self.checks.pop(offset, None)
        self._advance()
        return result

    # ------------------------------------------------------------------ check-back

    def check(self) -> int:
        """One round (periodic): offer every undecided half old enough to the checkers,
        discard those checked `transactionCheckMax` times.  Returns how many were reached."""
        ctl = self.controller
        store = ctl.store
        now_ms = int(ctl.clock() * 1000)
        cfg = ctl.config
        self.cursor = max(self.cursor, store.min_offset(TRANS_HALF_TOPIC, 0))
        offset, end = self.cursor, store.max_offset(TRANS_HALF_TOPIC, 0)
        reached = 0
        while offset < end:
            got = store.get_messages(TRANS_HALF_TOPIC, 0, offset, _READ_BATCH)
            for queue_offset, record in zip(got.queue_offsets, got.records, strict=True):
                if self.is_decided(queue_offset):
                    continue
                half = decode_record(record)
                if now_ms - half.store_timestamp < _immunity_ms(half, cfg.transaction_time_out):
                    return reached  # the rest are younger still
                asked = self.checks.get(queue_offset, 0)
                if asked >= cfg.transaction_check_max:
                    self._discard(half)
                    continue
                self.checks[queue_offset] = asked + 1
                self._record(half, _CHECK_TAG)
                reached += self._offer(half)
            if got.next_begin_offset <= offset:
                break
            offset = got.next_begin_offset
        return reached

    def _offer(self, half: MessageExt) -> int:
        shown = dataclasses.replace(
            half,
            topic=half.properties.get(Prop.REAL_TOPIC, half.topic),
            queue_id=int(half.properties.get(Prop.REAL_QID, "0")),
        )
        transaction_id = f"{half.queue_offset}:{half.properties.get(Prop.UNIQ_KEY, half.msg_id)}"
        for checker in self.checkers:
            try:
                if checker(shown, transaction_id):
                    return 1
            except Exception:
                log.exception("a transaction checker failed for half %d", half.queue_offset)
        log.info(
            "no producer reachable to check half %d (group %s, topic %s)",
            half.queue_offset,
            half.properties.get(Prop.PGROUP),
            shown.topic,
        )
        return 0

    def _discard(self, half: MessageExt) -> None:
        log.warning(
            "discarding transaction half %d of group %s after %d check-backs",
            half.queue_offset,
            half.properties.get(Prop.PGROUP),
            self.controller.config.transaction_check_max,
        )
        topics = self.controller.topics
        if topics.get(TRANS_CHECK_MAX_TIME_TOPIC) is None:  # readable, so it can be inspected
            topics.create_topic(TopicConfig(TRANS_CHECK_MAX_TIME_TOPIC, 1, 1, PERM_READ_WRITE))
        kept = MessageInner.moved(half, TRANS_CHECK_MAX_TIME_TOPIC, 0, dict(half.properties))
        self.controller.appender.store_message(kept)
        self._record_decision(half)
        self.discarded += 1


def _committed(half: MessageExt) -> MessageInner:
    """The real message (RocketMQ's endMessageTransaction): topic and queue restored, the
    COMMIT type set, the half's commit-log offset kept as the prepared offset."""
    props = dict(half.properties)
    topic = props.pop(Prop.REAL_TOPIC)
    queue_id = int(props.pop(Prop.REAL_QID))
    props.pop(Prop.TRAN_MSG, None)
    msg = MessageInner.moved(half, topic, queue_id, props)
    msg.sys_flag = (half.sys_flag & ~TYPE_MASK) | COMMIT
    msg.prepared_transaction_offset = half.commit_log_offset
    return msg


def _immunity_ms(half: MessageExt, default_ms: int) -> int:
    """How old a half must be before it is checked: its CHECK_IMMUNITY_TIME_IN_SECONDS when
    the producer set one, else transactionTimeOut."""
    value = half.properties.get(Prop.CHECK_IMMUNITY_TIME_IN_SECONDS)
    if value:
        try:
            return int(value) * 1000
        except ValueError:
            pass
    return default_ms
