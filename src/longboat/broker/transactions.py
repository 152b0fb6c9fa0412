"""Transactional messages: half messages, END_TRANSACTION (37) and the broker's check-back
(CHECK_TRANSACTION_STATE, 39), as RocketMQ 4.x.

A producer sends a message with `TRAN_MSG=true` (and the PREPARED sys flag): the send path
stores it as a *half* in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0 with its real topic and queue in
REAL_TOPIC / REAL_QID (`transaction_half`), so no consumer sees it.  The producer runs its local
transaction and sends END_TRANSACTION with the half's queue offset and commit-log offset:

| decision | what the broker stores                                                  |
|----------|-------------------------------------------------------------------------|
| COMMIT   | the real message (topic and queue restored, COMMIT sys flag), then an op record |
| ROLLBACK | an op record                                                             |
| UNKNOWN  | nothing: the half stays undecided                                       |

An *op record* is a message in `RMQ_SYS_TRANS_OP_HALF_TOPIC` queue 0 whose body is the
half's queue offset (tag `d`, as RocketMQ's REMOVETAG).  Op records are the only durable
decision state: at start the broker reads them back, so a half decided before a restart is
neither delivered again nor checked again, and an undecided one is still checked.

State (as data): `cursor` — every half below it is decided; `decided` — decided halves at or
past the cursor; `checks` — check-backs sent per undecided half during this run.  A half
moves UNDECIDED → DECIDED once, by the first END_TRANSACTION (from the producer or from a
check-back's answer) that commits or rolls it back, or by being discarded; a later
END_TRANSACTION for it is answered and ignored, so a decision is never applied twice.

Check-back: every `transactionCheckInterval` ms, each undecided half older than
`transactionTimeOut` ms (or its CHECK_IMMUNITY_TIME_IN_SECONDS) is sent, with its real topic,
to a live member of its producer group (PGROUP), which answers with END_TRANSACTION.  After
`transactionCheckMax` check-backs without a decision the half is discarded: copied to
`TRANS_CHECK_MAX_TIME_TOPIC` (kept for an operator) and given an op record.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from longboat.broker.transaction_half import TYPE_MASK
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import TopicConfig
from longboat.protocol.headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from longboat.protocol.message import MessageExt, decode_record, encode_message
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import (
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
)
from longboat.protocol.types import PERM_READ_WRITE
from longboat.remoting import Connection
from longboat.store import MessageInner, PutResult, PutStatus

if TYPE_CHECKING:
    from longboat.broker.feature_host import CoreHost

log = logging.getLogger("longboat.broker.transactions")

_OP_TAG = "d"  # RocketMQ's TransactionalMessageUtil.REMOVETAG
_READ_BATCH = 32


class TransactionService:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.cursor = 0
        self.decided: set[int] = set()
        self.checks: dict[int, int] = {}
        self.discarded = 0

    # ------------------------------------------------------------------ recovery

    def load(self) -> None:
        """Read the op records back (start hook): every half they name is decided."""
        store = self.controller.store
        offset = store.min_offset(TRANS_OP_HALF_TOPIC, 0)
        end = store.max_offset(TRANS_OP_HALF_TOPIC, 0)
        while offset < end:
            got = store.get_messages(TRANS_OP_HALF_TOPIC, 0, offset, _READ_BATCH)
            for record in got.records:
                try:
                    self.decided.add(int(decode_record(record).body))
                except ValueError:
                    log.warning("ignoring an op record whose body is not a half offset")
            if got.next_begin_offset <= offset:
                break
            offset = got.next_begin_offset
        self.cursor = store.min_offset(TRANS_HALF_TOPIC, 0)
        self._advance()
        pending = store.max_offset(TRANS_HALF_TOPIC, 0) - self.cursor - len(self.decided)
        if pending > 0:
            log.info("%d transaction half message(s) undecided at start", pending)

    def _advance(self) -> None:
        while self.cursor in self.decided:
            self.decided.discard(self.cursor)
            self.cursor += 1
        self.decided = {o for o in self.decided if o >= self.cursor}

    def is_decided(self, half_offset: int) -> bool:
        return half_offset < self.cursor or half_offset in self.decided

    # ------------------------------------------------------------------ END_TRANSACTION

    def end_transaction(
        self, conn: Connection, cmd: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand | None] | None:
        header = EndTransactionRequestHeader.from_ext(cmd.ext_fields)
        decision = header.commitOrRollback & TYPE_MASK
        if decision == MessageSysFlag.TRANSACTION_NOT_TYPE:
            return self._answer(cmd, ResponseCode.SUCCESS, None)  # still unknown: wait
        if decision not in (
            MessageSysFlag.TRANSACTION_COMMIT_TYPE,
            MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
        ):
            return self._answer(
                cmd, ResponseCode.SYSTEM_ERROR, f"commitOrRollback {decision} is not a decision"
            )
        record = self.controller.store.read_record(header.commitLogOffset)
        half = decode_record(record) if record is not None else None
        problem = self._mismatch(half, header)
        if problem is not None or half is None:
            log.warning("END_TRANSACTION from %s refused: %s", conn.peer, problem)
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, problem)
        offset = header.tranStateTableOffset
        if self.is_decided(offset):
            return self._answer(cmd, ResponseCode.SUCCESS, "the transaction was already decided")
        results: list[PutResult] = []
        if decision == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
            real = self._committed(half)
            result = self.controller.store_message(real)
            if result.status is not PutStatus.PUT_OK:
                return self._answer(
                    cmd, ResponseCode.SYSTEM_ERROR, f"storing the committed message: {result}"
                )
            results.append(result)
        results.append(self._decide(half, offset))
        if any(r.durable is not None for r in results):
            return self._after_flush(cmd, results)
        return self._answer(cmd, ResponseCode.SUCCESS, None)

    @staticmethod
    def _mismatch(half: MessageExt | None, header: EndTransactionRequestHeader) -> str | None:
        """RocketMQ's checkPrepareMessage: why this is not the half the request names."""
        if half is None or half.topic != TRANS_HALF_TOPIC:
            return f"no half message at commit-log offset {header.commitLogOffset}"
        if half.queue_offset != header.tranStateTableOffset:
            return (
                f"the transaction state table offset is wrong: {header.tranStateTableOffset}, "
                f"the half is at {half.queue_offset}"
            )
        if half.properties.get(Prop.PGROUP) != header.producerGroup:
            return f"the producer group is wrong: {header.producerGroup}"
        return None

    @staticmethod
    def _committed(half: MessageExt) -> MessageInner:
        """The real message (RocketMQ's endMessageTransaction): topic and queue restored, the
        COMMIT type set, the half's commit-log offset kept as the prepared offset."""
        props = dict(half.properties)
        topic = props.pop(Prop.REAL_TOPIC)
        queue_id = int(props.pop(Prop.REAL_QID))
        props.pop(Prop.TRAN_MSG, None)
        msg = MessageInner.moved(half, topic, queue_id, props)
        msg.sys_flag = (half.sys_flag & ~TYPE_MASK) | MessageSysFlag.TRANSACTION_COMMIT_TYPE
        msg.prepared_transaction_offset = half.commit_log_offset
        return msg

    def _decide(self, half: MessageExt, offset: int) -> PutResult:
        """Write the op record and mark the half decided (in-line: no second decision can
        slip in between)."""
        op = MessageInner(
            topic=TRANS_OP_HALF_TOPIC,
            queue_id=0,
            body=str(offset).encode(),
            properties={Prop.TAGS: _OP_TAG},
            born_timestamp=int(time.time() * 1000),
            born_host=half.born_host,
        )
        result = self.controller.store_message(op)
        self.decided.add(offset)
        self.checks.pop(offset, None)
        self._advance()
        return result

    async def _after_flush(
        self, cmd: RemotingCommand, results: list[PutResult]
    ) -> RemotingCommand | None:
        for result in results:
            done = await self.controller.await_durable(result)
            if done.status is not PutStatus.PUT_OK:
                return self._answer(cmd, ResponseCode.FLUSH_DISK_TIMEOUT, done.status.value)
        return self._answer(cmd, ResponseCode.SUCCESS, None)

    @staticmethod
    def _answer(cmd: RemotingCommand, code: int, remark: str | None) -> RemotingCommand | None:
        return None if cmd.is_oneway else cmd.make_response(code, remark)

    # ------------------------------------------------------------------ check-back

    def check(self) -> int:
        """One round (periodic): ask about every undecided half old enough, discard those
        asked `transactionCheckMax` times.  Returns how many check-backs were sent."""
        ctl = self.controller
        store = ctl.store
        now_ms = int(ctl.clock() * 1000)
        cfg = ctl.config
        self.cursor = max(self.cursor, store.min_offset(TRANS_HALF_TOPIC, 0))
        offset, end = self.cursor, store.max_offset(TRANS_HALF_TOPIC, 0)
        sent = 0
        while offset < end:
            got = store.get_messages(TRANS_HALF_TOPIC, 0, offset, _READ_BATCH)
            for queue_offset, record in zip(got.queue_offsets, got.records, strict=True):
                if self.is_decided(queue_offset):
                    continue
                half = decode_record(record)
                if now_ms - half.store_timestamp < _immunity_ms(half, cfg.transaction_time_out):
                    return sent  # the rest are younger still
                asked = self.checks.get(queue_offset, 0)
                if asked >= cfg.transaction_check_max:
                    self._discard(half)
                    continue
                self.checks[queue_offset] = asked + 1
                sent += self._ask(half)
            if got.next_begin_offset <= offset:
                break
            offset = got.next_begin_offset
        return sent

    def _ask(self, half: MessageExt) -> int:
        group = half.properties.get(Prop.PGROUP, "")
        conn = self.controller.producers.any_live(group)
        if conn is None:
            log.info("no live producer of group %s to check half %d", group, half.queue_offset)
            return 0
        uniq = half.properties.get(Prop.UNIQ_KEY)
        header = CheckTransactionStateRequestHeader(
            tranStateTableOffset=half.queue_offset,
            commitLogOffset=half.commit_log_offset,
            msgId=uniq,
            transactionId=uniq,
            offsetMsgId=half.offset_msg_id,
        )
        shown = dataclasses.replace(
            half,
            topic=half.properties.get(Prop.REAL_TOPIC, half.topic),
            queue_id=int(half.properties.get(Prop.REAL_QID, "0")),
        )
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE,
            header.to_ext(),
            encode_message(shown),
            oneway=True,
        )
        try:
            conn.oneway(request)
        except Exception as exc:  # the producer just went away; the next round tries again
            log.info("check-back to %s failed: %s", conn.peer, exc)
            return 0
        return 1

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
        self.controller.store_message(kept)
        self._decide(half, half.queue_offset)
        self.discarded += 1


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


def install(controller: CoreHost) -> None:
    service = TransactionService(controller)
    controller.router.register(RequestCode.END_TRANSACTION, service.end_transaction)
    controller.add_start_hook(service.load)
    controller.add_periodic(controller.config.transaction_check_interval / 1000, service.check)
