"""RocketMQ's message trace, written by Longboat's client: Pub records for sends, SubBefore
and SubAfter for each delivery to a listener (Java's `SendMessageTraceHookImpl` and
`ConsumeMessageTraceHookImpl`), queued on a `TraceDispatcher`.

A transactional producer adds an EndTransaction record per outcome it reports (its local
transaction's, or a check-back's answer).

As Java's client does, no record is written for a message sent to the trace topic itself,
for a send that failed (no answer to report), or when the broker says its trace switch is
off (`traceOn=false`: the send answer's TRACE_ON, a received message's TRACE_ON property).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from typing import Any

from longboat.client.message import Message, SendResult, SendStatus
from longboat.client.tracing.dispatcher import TraceDispatcher
from longboat.client.tracing.hooks import ConsumeEnd, SendEnd
from longboat.protocol.errors import ProtocolError
from longboat.protocol.ids import UniqKeyGenerator, decode_offset_msg_id
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop
from longboat.protocol.trace import DEFAULT_REGION, MessageType, TraceRecord, TraceType


def _now_ms() -> int:
    return int(time.time() * 1000)


def _store_host(offset_msg_id: str) -> str | None:
    """The broker's address, from the offset id (which encodes it)."""
    try:
        host, port, _ = decode_offset_msg_id(offset_msg_id.split(",")[0])
    except ProtocolError:
        return None
    return f"{host}:{port}"


# Looked up once: an enum member's attribute access costs more than the rest of a line.
_PUB, _DELAY, _NORMAL = TraceType.PUB, MessageType.DELAY, MessageType.NORMAL
_HALF = MessageType.TRANS_HALF
_SEND_OK = SendStatus.SEND_OK

# An offset id is the broker's address then 16 hex digits of commit-log offset: the address
# part repeats for every send to one broker, so its decoding is kept.
_OFFSET_DIGITS = 16


class MessageTracer:
    """A send and consume observer writing RocketMQ's trace records to `dispatcher`."""

    def __init__(self, dispatcher: TraceDispatcher, client_ip: str) -> None:
        self.dispatcher = dispatcher
        self._topic = dispatcher.topic
        self._append = dispatcher.append
        # Request ids pair a delivery's SubBefore with its SubAfter (Java: a fresh unique id).
        self._store_hosts: dict[str, str | None] = {}
        self._request_ids = UniqKeyGenerator(
            client_ip, now_ms=_now_ms, pid=os.getpid(), rng=random.Random()
        )

    # ------------------------------------------------------------------ sends

    def begin_send(self, group: str, msg: Message) -> SendEnd:
        started = time.time()

        def end(msg_id: str, result: SendResult | None, error: BaseException | None) -> None:
            if result is None or result.region_id is None or not result.trace_on:
                return
            if msg.topic == self._topic:
                return
            offset_id = result.offset_msg_id
            # Positional, in the record's field order: this runs once per send.
            self._append(
                TraceRecord(
                    _PUB,
                    msg_id,
                    int(started * 1000),
                    result.region_id,
                    group,
                    msg.topic,
                    msg.tags,
                    " ".join(msg.key_list) or None,
                    self._store_host(offset_id),
                    len(msg.body),
                    int((time.time() - started) * 1000),
                    _type_of(msg),
                    offset_id,
                    result.status is _SEND_OK,
                )
            )

        return end

    def _store_host(self, offset_msg_id: str) -> str | None:
        prefix = offset_msg_id[:-_OFFSET_DIGITS]
        host = self._store_hosts.get(prefix, "")
        if host == "":
            host = self._store_hosts[prefix] = _store_host(offset_msg_id)
        return host

    def end_transaction(
        self,
        group: str,
        msg: Message | MessageExt,
        msg_id: str,
        store_host: str | None,
        state: str,
        *,
        from_check: bool,
    ) -> None:
        """An EndTransaction record: the producer told the broker a half's outcome (`state`,
        LocalTransactionState's name), after its local transaction or a check-back."""
        if msg.topic == self._topic:
            return
        keys = " ".join(msg.key_list) or None
        self._append(
            TraceRecord(
                TraceType.END_TRANSACTION,
                msg_id=msg_id,
                timestamp=_now_ms(),
                region_id=msg.properties.get(Prop.MSG_REGION) or DEFAULT_REGION,
                group=group,
                topic=msg.topic,
                tags=msg.tags,
                keys=keys,
                store_host=store_host,
                msg_type=MessageType.TRANS_COMMIT,
                transaction_id=msg_id,
                transaction_state=state,
                from_transaction_check=from_check,
            )
        )

    # ------------------------------------------------------------------ deliveries

    def received(self, group: str, msgs: Sequence[MessageExt]) -> None:
        """Nothing: the records are written around the listener."""

    def begin_consume(self, group: str, msgs: Sequence[MessageExt]) -> ConsumeEnd:
        traced = [m for m in msgs if m.properties.get(Prop.TRACE_ON) != "false"]
        if not traced:
            return _nothing
        request_id = self._request_ids.next()
        started = _now_ms()
        clock = time.perf_counter()
        region = traced[0].properties.get(Prop.MSG_REGION)

        def record(kind: TraceType, m: MessageExt, **fields: Any) -> None:
            """A record of `m` in this consume call: what its two records have in common."""
            self.dispatcher.append(
                TraceRecord(
                    kind,
                    msg_id=m.msg_id,
                    timestamp=started,
                    group=group,
                    request_id=request_id,
                    keys=m.keys,
                    **fields,
                )
            )

        for m in traced:
            record(TraceType.SUB_BEFORE, m, region_id=region, retry_times=m.reconsume_times)

        def end(success: bool) -> None:
            cost = int((time.perf_counter() - clock) * 1000 / len(traced))
            for m in traced:
                record(TraceType.SUB_AFTER, m, cost_ms=cost, success=success)

        return end


def _type_of(msg: Message) -> MessageType:
    if msg.delayed:
        return _DELAY
    return _HALF if msg.properties.get(Prop.TRAN_MSG) == "true" else _NORMAL


def _nothing(success: bool) -> None:
    """The end of a delivery nothing is traced for."""
