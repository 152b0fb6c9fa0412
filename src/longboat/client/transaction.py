"""Transactional messages: RocketMQ's `TransactionMQProducer` for Python.

`send_in_transaction(msg, execute, arg)` sends `msg` as a half (stored, invisible to
consumers), runs `execute(msg, arg)` — your local transaction — and tells the broker its
outcome: COMMIT makes the message visible, ROLLBACK drops it, UNKNOWN (or an exception, or a
crash before answering) leaves the decision to the broker's check-back, which calls
`check_listener(message)` on a live producer of the same group until it answers COMMIT or
ROLLBACK (at most the broker's `transactionCheckMax` times, then the half is discarded).
Both callables may be plain or async.  A half that could not be stored is never executed:
the result says ROLLBACK and carries the failed send's status.

The check listener must answer from durable state (your database), not from memory: it runs
in whichever process of the group the broker picks, possibly after a restart.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from longboat.client.errors import ClientUsageError
from longboat.client.message import Message, MessageExt, SendResult
from longboat.client.producer import DEFAULT_PRODUCER_GROUP, Producer, check_application_message
from longboat.client.tracing.hooks import begin_send, ended
from longboat.protocol.headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.remoting import Connection

log = logging.getLogger(__name__)


class LocalTransactionState(Enum):
    """What the local transaction (or a check) says: Java's LocalTransactionState."""

    COMMIT_MESSAGE = MessageSysFlag.TRANSACTION_COMMIT_TYPE
    ROLLBACK_MESSAGE = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
    UNKNOWN = MessageSysFlag.TRANSACTION_NOT_TYPE


LocalTransaction = Callable[
    [Message, Any], LocalTransactionState | Awaitable[LocalTransactionState]
]
CheckListener = Callable[[MessageExt], LocalTransactionState | Awaitable[LocalTransactionState]]


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    """Where the half went and what the local transaction decided."""

    send: SendResult
    local_state: LocalTransactionState


class TransactionProducer(Producer):
    """A producer whose sends can be tied to a local transaction (see the module docstring)."""

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        *,
        check_listener: CheckListener,
        **options: Any,
    ) -> None:
        super().__init__(group, **options)
        self.check_listener = check_listener
        self._checks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        await super().start()
        self.instance.add_transaction_checker(self.group, self._on_check)

    async def shutdown(self) -> None:
        instance = self._instance
        if instance is not None:
            instance.remove_transaction_checker(self.group)
        for task in list(self._checks):
            task.cancel()
        if self._checks:
            await asyncio.gather(*self._checks, return_exceptions=True)
        await super().shutdown()

    def __repr__(self) -> str:
        return f"TransactionProducer({self.group})"

    async def send_in_transaction(
        self,
        msg: Message,
        execute: LocalTransaction,
        arg: Any = None,
        *,
        timeout: float | None = None,
    ) -> TransactionSendResult:
        """Send `msg` as a half, run `execute(msg, arg)`, report its outcome to the broker.

        Raises what `send` raises when the half cannot be sent (nothing executed), and
        ClientUsageError for a delayed message (RocketMQ has no delayed transactions)."""
        if msg.delayed:
            raise ClientUsageError("a transactional message cannot be delayed")
        check_application_message(msg)
        instance = self.instance
        half = replace(
            msg, properties={**msg.properties, Prop.TRAN_MSG: "true", Prop.PGROUP: self.group}
        )
        header, body, uniq = self._prepare(half)
        header = replace(header, sysFlag=header.sysFlag | MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        traced = begin_send(self._tracing.observers, self.group, half)
        result = await ended(traced, uniq, self._send_encoded(header, body, uniq, None, timeout))
        if not result.ok:
            return TransactionSendResult(result, LocalTransactionState.ROLLBACK_MESSAGE)
        try:
            state = await _resolve(execute(msg, arg))
        except Exception:
            log.exception("the local transaction of %s raised: the broker will check back", uniq)
            state = LocalTransactionState.UNKNOWN
        broker_name = result.message_queue.broker_name
        addr = await instance.find_master_addr(broker_name, msg.topic)
        end = EndTransactionRequestHeader(
            producerGroup=self.group,
            tranStateTableOffset=result.queue_offset,
            commitLogOffset=decode_offset_msg_id(result.offset_msg_id)[2],
            commitOrRollback=state.value,
            msgId=uniq,
            fromTransactionCheck=False,
            transactionId=uniq,
        )
        try:
            await instance.api.end_transaction(addr, end, broker_name=broker_name)
        except Exception as exc:  # the half stays undecided: the check-back will ask
            log.warning("END_TRANSACTION for %s failed (%s): the broker will check back", uniq, exc)
        if self._tracing.message_tracer is not None:
            self._tracing.message_tracer.end_transaction(
                self.group, msg, uniq, addr, state.name, from_check=False
            )
        return TransactionSendResult(result, state)

    # ------------------------------------------------------------------ check-back

    def _on_check(
        self, conn: Connection, header: CheckTransactionStateRequestHeader, msg: MessageExt
    ) -> None:
        task = asyncio.ensure_future(self._answer_check(conn, header, msg))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _answer_check(
        self, conn: Connection, header: CheckTransactionStateRequestHeader, msg: MessageExt
    ) -> None:
        try:
            state = await _resolve(self.check_listener(msg))
        except Exception:
            log.exception("the check listener raised for %s: answering UNKNOWN", header.msgId)
            state = LocalTransactionState.UNKNOWN
        end = EndTransactionRequestHeader(
            producerGroup=self.group,
            tranStateTableOffset=header.tranStateTableOffset,
            commitLogOffset=header.commitLogOffset,
            commitOrRollback=state.value,
            msgId=msg.uniq_key or header.msgId or "",
            fromTransactionCheck=True,
            transactionId=header.transactionId,
        )
        try:
            await self.instance.api.end_transaction(conn.peer, end)
        except Exception as exc:  # the broker asks again next round
            log.info("answering a transaction check to %s failed: %s", conn.peer, exc)
        if self._tracing.message_tracer is not None:
            self._tracing.message_tracer.end_transaction(
                self.group, msg, end.msgId, conn.peer, state.name, from_check=True
            )


async def _resolve(
    value: LocalTransactionState | Awaitable[LocalTransactionState],
) -> LocalTransactionState:
    state = await value if inspect.isawaitable(value) else value
    if not isinstance(state, LocalTransactionState):
        log.warning("a transaction callback returned %r, not a LocalTransactionState", state)
        return LocalTransactionState.UNKNOWN
    return state
