"""Transactions over remoting: END_TRANSACTION (37) from producers, CHECK_TRANSACTION_STATE
(39) to them.  The half messages, decisions and check-back rounds are the core's
(`core/transactions.py`), shared with the gRPC endpoint; this module only speaks remoting to it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from longboat.broker.core.half_messages import TYPE_MASK
from longboat.broker.core.transactions import COMMIT, ROLLBACK
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from longboat.protocol.message import MessageExt, decode_record, encode_message
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import TRANS_HALF_TOPIC
from longboat.remoting import Connection
from longboat.store import PutResult, PutStatus

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- remoting


class RemotingTransactions:
    """END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39) over remoting."""

    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.service = controller.transactions

    def end_transaction(
        self, conn: Connection, cmd: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand | None] | None:
        header = EndTransactionRequestHeader.from_ext(cmd.ext_fields)
        decision = header.commitOrRollback & TYPE_MASK
        if decision == MessageSysFlag.TRANSACTION_NOT_TYPE:
            return _answer(cmd, ResponseCode.SUCCESS, None)  # still unknown: wait
        if decision not in (COMMIT, ROLLBACK):
            return _answer(
                cmd, ResponseCode.SYSTEM_ERROR, f"commitOrRollback {decision} is not a decision"
            )
        record = self.controller.store.read_record(header.commitLogOffset)
        half = decode_record(record) if record is not None else None
        problem = _mismatch(half, header)
        if problem is not None or half is None:
            log.warning("END_TRANSACTION from %s refused: %s", conn.peer, problem)
            return _answer(cmd, ResponseCode.SYSTEM_ERROR, problem)
        if self.service.is_decided(half.queue_offset):
            return _answer(cmd, ResponseCode.SUCCESS, "the transaction was already decided")
        results = self.service.decide(half, decision)
        failed = results[0]
        if failed.status is not PutStatus.PUT_OK:
            return _answer(
                cmd, ResponseCode.SYSTEM_ERROR, f"storing the committed message: {failed.status}"
            )
        if any(r.durable is not None for r in results):
            return self._after_flush(cmd, results)
        return _answer(cmd, ResponseCode.SUCCESS, None)

    async def _after_flush(
        self, cmd: RemotingCommand, results: list[PutResult]
    ) -> RemotingCommand | None:
        for result in results:
            done = await self.controller.appender.await_durable(result)
            if done.status is not PutStatus.PUT_OK:
                return _answer(cmd, ResponseCode.FLUSH_DISK_TIMEOUT, done.status.value)
        return _answer(cmd, ResponseCode.SUCCESS, None)

    def check_with_group(self, half: MessageExt, transaction_id: str) -> bool:
        """CHECK_TRANSACTION_STATE to a live member of the half's producer group."""
        conn = self.controller.producers.any_live(half.properties.get(Prop.PGROUP, ""))
        if conn is None:
            return False
        uniq = half.properties.get(Prop.UNIQ_KEY)
        header = CheckTransactionStateRequestHeader(
            tranStateTableOffset=half.queue_offset,
            commitLogOffset=half.commit_log_offset,
            msgId=uniq,
            transactionId=uniq,
            offsetMsgId=half.offset_msg_id,
        )
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header.to_ext(), encode_message(half), oneway=True
        )
        try:
            conn.oneway(request)
        except Exception as exc:  # the producer just went away; the next round tries again
            log.info("check-back to %s failed: %s", conn.peer, exc)
            return False
        return True


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


def _answer(cmd: RemotingCommand, code: int, remark: str | None) -> RemotingCommand | None:
    return None if cmd.is_oneway else cmd.make_response(code, remark)


def install(controller: CoreHost) -> None:
    """Remoting's side: END_TRANSACTION, and check-backs to producer groups.  The service
    itself (loaded at start, checking periodically) is the controller's."""
    remoting = RemotingTransactions(controller)
    controller.router.register(RequestCode.END_TRANSACTION, remoting.end_transaction)
    controller.transactions.add_checker(remoting.check_with_group)
