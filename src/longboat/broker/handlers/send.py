"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320) over remoting: decode,
admit and append through the core, encode.

The append happens in-line in the handler, on the event loop, so messages on one connection are
stored in the order they arrived; only the wait for an fsync (SYNC_FLUSH) is asynchronous.

The checks are the core's (`core/admission.py`: broker writable, topic legal and not the
broker's own, known or auto-created through the header's default topic, writable, queue id in
range; transactional halves), and so are the append, its durability and the put-status table
(`core/append.py`).  A transactional half (TRAN_MSG) is stored in the half topic
(`core/half_messages.py`).  What is remoting's own: the header, the batch body, the encoded
fast path below, and the answer.  Every answer, success or not, carries `MSG_REGION` and
`TRACE_ON` (the Java client reads MSG_REGION unconditionally); stored answers (0 and 10)
carry `msgId` (the offset id), `queueId` and `queueOffset`.

A plain single message (not delayed, not transactional, not to a retry topic: nearly every
send) keeps its property string as sent, with CLUSTER appended, and is stored through the
batch's encoded path: no property dict is built or written back.  Properties are stored as
RocketMQ 4.9 stores them, WAIT included.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from longboat.broker.core.append import LATE_REMARKS, outcome
from longboat.broker.core.half_messages import half_message, is_half
from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.core.retry_policy import route_retry_send
from longboat.broker.core.timers import TIMER_PROPS, TIMER_TOPIC, recall_handle_for, reroute_timer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.batch import split_batch
from longboat.protocol.errors import ProtocolError
from longboat.protocol.headers import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from longboat.protocol.ids import host_bytes
from longboat.protocol.properties import (
    Prop,
    properties_to_string,
    property_marker,
    raw_property,
    string_to_properties,
    with_appended,
)
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import (
    RETRY_GROUP_TOPIC_PREFIX,
)
from longboat.remoting import Connection
from longboat.store import EncodedBatch, MessageInner, PutResult, PutStatus

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

_BORN_HOST = "longboat.born_host"
_DELAY_MARKER = property_marker(Prop.DELAY)
_TIMER_MARKERS = tuple(property_marker(name) for name in TIMER_PROPS)
# Any of them, in one scan of a batch's properties.
_TIMER_NAMES = re.compile(b"|".join(map(re.escape, _TIMER_MARKERS)))
_WAIT_MARKER = property_marker(Prop.WAIT)
# A single send whose property string holds one of these takes the parsed path.
_SPECIAL_MARKERS = tuple(
    property_marker(name).decode()
    for name in (
        Prop.DELAY,
        Prop.TRAN_MSG,
        Prop.TIMER_DELIVER_MS,
        Prop.TIMER_DELAY_SEC,
        Prop.TIMER_DELAY_MS,
    )
)
_LOOPBACK = b"\x7f\x00\x00\x01"
TIMER_IN_BATCH_REMARK = "messages of a batch may not be timers: send each timer on its own"

SendAnswer = RemotingCommand | Awaitable[RemotingCommand]


@dataclass(slots=True)
class _Send:
    """A validated send: its message or batch, the queue used, whether to wait for
    durability."""

    messages: MessageInner | EncodedBatch
    queue_id: int
    wait: bool


class SendProcessor:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.admission = controller.admission
        self.appender = controller.appender
        cfg = controller.config
        self._extra = {"MSG_REGION": cfg.region_id, "TRACE_ON": "true" if cfg.trace_on else "false"}

    def handle(self, conn: Connection, cmd: RemotingCommand) -> SendAnswer:
        header_cls = (
            SendMessageRequestHeader
            if cmd.code == RequestCode.SEND_MESSAGE
            else SendMessageRequestHeaderV2
        )
        header = header_cls.from_ext(cmd.ext_fields)
        appender = self.appender
        try:
            send = self._prepare(conn, cmd, header)
            if send.wait:
                appender.admit_waiting()
        except Refusal as refused:
            return self._answer(cmd, refused.code, refused.remark)
        msgs = send.messages
        recall_handle = None
        if type(msgs) is EncodedBatch:
            result = appender.store_encoded(msgs)
        else:
            assert type(msgs) is MessageInner
            try:
                result = appender.store_message(msgs)
            except Refusal as refused:  # a timer too far ahead
                return self._answer(cmd, refused.code, refused.remark)
            if result.status is PutStatus.PUT_OK and msgs.topic == TIMER_TOPIC:
                recall_handle = recall_handle_for(
                    msgs.properties,
                    self.controller.config.broker_name,
                    msgs.properties.get(Prop.UNIQ_KEY, ""),
                )
        if send.wait and appender.must_wait(result):
            return self._after_flush(cmd, send.queue_id, result, recall_handle)
        return self._stored(cmd, send.queue_id, result, recall_handle)

    async def _after_flush(
        self, cmd: RemotingCommand, queue_id: int, result: PutResult, recall_handle: str | None
    ) -> RemotingCommand:
        return self._stored(cmd, queue_id, await self.appender.await_durable(result), recall_handle)

    def _stored(
        self,
        cmd: RemotingCommand,
        queue_id: int,
        result: PutResult,
        recall_handle: str | None = None,
    ) -> RemotingCommand:
        try:
            late = outcome(result)
        except Refusal as refused:
            return self._answer(cmd, refused.code, refused.remark)
        appended = result.appended
        assert appended is not None  # stored
        ext = SendMessageResponseHeader(
            msgId=appended.joined_msg_ids(),
            queueId=queue_id,
            queueOffset=appended.queue_offsets[0],
            recallHandle=recall_handle,
            **self._extra,
        ).to_ext()
        if late is None:
            return cmd.make_response(ResponseCode.SUCCESS, None, ext_fields=ext)
        return cmd.make_response(late.code, LATE_REMARKS[late], ext_fields=ext)

    def _answer(self, cmd: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        return cmd.make_response(code, remark, ext_fields=dict(self._extra))

    # ------------------------------------------------------------------ validation

    def _prepare(
        self, conn: Connection, cmd: RemotingCommand, header: SendMessageRequestHeader
    ) -> _Send:
        ctl = self.controller
        topic = header.topic
        admission = self.admission
        config = admission.send_topic(topic, header.defaultTopic, header.defaultTopicQueueNums)
        queue_id = admission.send_queue(config, header.queueId)
        sys_flag = header.sysFlag
        if config.topic_filter_type == "MULTI_TAG":
            sys_flag |= MessageSysFlag.MULTI_TAGS
        text = header.properties or ""
        admission.check_properties(text)
        born_host = self._born_host(conn)
        is_batch = cmd.code == RequestCode.SEND_BATCH_MESSAGE or bool(header.batch)
        if not is_batch and _is_plain(topic, text, sys_flag, header):
            message = self._plain_message(cmd, header, text)
            # WAIT=false: the producer does not wait for durability.
            wait = raw_property(message[1], _WAIT_MARKER) != b"false"
            single = _encoded(conn, header, topic, queue_id, sys_flag, born_host, [message])
            return _Send(single, queue_id, wait)
        props = string_to_properties(text)
        admission.stamp_cluster(props)
        # A single message keeps WAIT, as RocketMQ stores it; a batch's own properties are
        # appended to every message of it, which carry their own.
        wait = (
            props.pop(Prop.WAIT, "true") if is_batch else props.get(Prop.WAIT, "true")
        ) != "false"
        half = (
            is_half(props)
            or MessageSysFlag.transaction_type(sys_flag) == MessageSysFlag.TRANSACTION_PREPARED_TYPE
        )
        if half:
            admission.admit_half(in_batch=is_batch)
        if not is_batch:
            msg = MessageInner(
                topic=topic,
                queue_id=queue_id,
                body=cmd.body,
                properties=props,
                flag=header.flag,
                sys_flag=sys_flag,
                born_timestamp=header.bornTimestamp,
                born_host=born_host,
                born_port=conn.peer_port,
                reconsume_times=header.reconsumeTimes or 0,
            )
            route_retry_send(
                ctl,
                msg,
                reconsume_times=header.reconsumeTimes,
                max_reconsume_header=header.maxReconsumeTimes,
                request_version=cmd.version,
            )
            if half:
                half_message(msg)
            return _Send(msg, queue_id, wait)
        messages, joined = self._batch_messages(cmd, topic, props)
        self._refuse_timers(topic, queue_id, sys_flag, messages, joined)
        batch = _encoded(conn, header, topic, queue_id, sys_flag, born_host, messages)
        return _Send(batch, queue_id, wait)

    @staticmethod
    def _batch_messages(
        cmd: RemotingCommand, topic: str, batch_props: dict[str, str]
    ) -> tuple[list[tuple[bytes, bytes, int]], bytes]:
        """The batch's messages with their property bytes kept and the batch's properties
        (CLUSTER and the header's) appended as bytes, as RocketMQ's batch encoder does: no
        message is parsed unless it names DELAY (refused: batches are not scheduled).  Also
        their properties joined by separators, where the checks look for names."""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise Refusal(Reason.ILLEGAL_MESSAGE, "batches may not go to retry topics")
        appended = properties_to_string(batch_props).encode()
        try:
            messages = split_batch(cmd.body, appended)
        except ProtocolError as exc:
            raise Refusal(Reason.ILLEGAL_MESSAGE, f"{exc} (the sender's error)") from None
        if not messages:
            raise Refusal(Reason.ILLEGAL_MESSAGE, "the batch holds no message")
        _refuse_delayed(batch_props)
        # A message names DELAY only if the batch's bytes do (a name holds no separator, so
        # none spans a message and what is appended to it); then each message's own
        # properties are read, without the batch's appended.
        joined = b"\x02".join([props for _, props, _ in messages])
        if _DELAY_MARKER in joined:
            for _, props, _ in split_batch(cmd.body):
                if _DELAY_MARKER in props:
                    _refuse_delayed(string_to_properties(props.decode(errors="replace")))
        return messages, joined

    def _refuse_timers(
        self,
        topic: str,
        queue_id: int,
        sys_flag: int,
        messages: list[tuple[bytes, bytes, int]],
        joined: bytes,
    ) -> None:
        """Refuse (MESSAGE_ILLEGAL) a batch holding a message that, sent alone, would be a
        timer: a batch is one append to one queue, a timer waits in the wheel's.  RocketMQ
        stores such a batch as plain messages, each delivered at once, before its time.
        Checked on the messages with the batch's properties appended, which could name one;
        a timer refused alone (too far ahead, timers off) is refused with its own remark.
        `joined`: the messages' properties joined by separators."""
        if _TIMER_NAMES.search(joined) is None:
            return
        cfg = self.controller.config
        now_ms = int(self.appender.clock() * 1000)
        for body, props, _ in messages:
            if not any(marker in props for marker in _TIMER_MARKERS):
                continue
            alone = MessageInner(
                topic=topic,
                queue_id=queue_id,
                body=body,
                properties=string_to_properties(props.decode(errors="replace")),
                sys_flag=sys_flag,
            )
            if reroute_timer(
                alone,
                now_ms,
                cfg.timer_precision_ms,
                cfg.timer_max_delay_sec,
                cfg.timer_wheel_enable,
            ):
                raise Refusal(Reason.ILLEGAL_MESSAGE, TIMER_IN_BATCH_REMARK)

    def _plain_message(
        self, cmd: RemotingCommand, header: SendMessageRequestHeader, text: str
    ) -> tuple[bytes, bytes, int]:
        """A plain single message as a batch's message: its property bytes as sent, CLUSTER
        appended (read as the broker's, as in a batch)."""
        # The cluster name is live configuration: read per send, as the parsed path does.
        cluster = self.admission.cluster_property()
        # Header text was decoded strictly, so it always encodes.
        return cmd.body, with_appended(text.encode(), cluster), header.flag

    @staticmethod
    def _born_host(conn: Connection) -> bytes:
        cached = conn.attributes.get(_BORN_HOST)
        if isinstance(cached, bytes):
            return cached
        try:
            host = host_bytes(conn.peer_host)
        except ValueError:
            host = _LOOPBACK
        if host[:12] == b"\x00" * 10 + b"\xff\xff":  # IPv4-mapped IPv6: store as IPv4
            host = host[12:]
        conn.attributes[_BORN_HOST] = host
        return host


def _encoded(
    conn: Connection,
    header: SendMessageRequestHeader,
    topic: str,
    queue_id: int,
    sys_flag: int,
    born_host: bytes,
    messages: list[tuple[bytes, bytes, int]],
) -> EncodedBatch:
    """Messages that keep their property bytes, with what the request says of them all."""
    return EncodedBatch(
        topic=topic,
        queue_id=queue_id,
        messages=messages,
        sys_flag=sys_flag,
        born_timestamp=header.bornTimestamp,
        born_host=born_host,
        born_port=conn.peer_port,
    )


def _is_plain(topic: str, text: str, sys_flag: int, header: SendMessageRequestHeader) -> bool:
    """A single send with nothing for the broker to rewrite: not to a retry topic (dead
    letters), not redelivered, not delayed, not a transaction's prepared half."""
    return not (
        topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        or header.reconsumeTimes
        or MessageSysFlag.transaction_type(sys_flag) == MessageSysFlag.TRANSACTION_PREPARED_TYPE
        or any(marker in text for marker in _SPECIAL_MARKERS)
    )


def _refuse_delayed(props: dict[str, str]) -> None:
    if props.get(Prop.DELAY, "0") not in ("", "0"):
        raise Refusal(Reason.ILLEGAL_MESSAGE, "messages of a batch may not be delayed")


def install(controller: CoreHost) -> None:
    processor = SendProcessor(controller)
    for code in (
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
    ):
        controller.router.register(code, processor.handle)
