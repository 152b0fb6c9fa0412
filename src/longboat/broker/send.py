"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).

The append happens in-line in the handler, on the event loop, so messages on one connection are
stored in the order they arrived; only the wait for an fsync (SYNC_FLUSH) is asynchronous.

Checks, in RocketMQ's order: broker writable, topic name legal, not a broker-internal topic,
topic known or auto-created through the default topic (TBW102), topic writable, queue id in
range (negative: the broker picks one).  A transactional half (TRAN_MSG) is stored in the
half topic (see `transactions`); halves in a batch, or with `rejectTransactionMessage`, are
refused.  Every answer, success or not, carries `MSG_REGION` and
`TRACE_ON` (the Java client reads MSG_REGION unconditionally); stored answers (0 and 10)
carry `msgId` (the offset id), `queueId` and `queueOffset`.

A plain single message (not delayed, not transactional, not to a retry topic: nearly every
send) keeps its property string as sent, with CLUSTER appended, and is stored through the
batch's encoded path: no property dict is built or written back.  Properties are stored as
RocketMQ 4.9 stores them, WAIT included.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from longboat.broker.retry_policy import route_retry_send
from longboat.broker.transaction_half import half_message, is_half
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
)
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import (
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    validate_topic,
)
from longboat.protocol.types import PERM_WRITE
from longboat.remoting import Connection
from longboat.store import EncodedBatch, MessageInner, PutResult, PutStatus

if TYPE_CHECKING:
    from longboat.broker.feature_host import CoreHost

_PUT_CODES: dict[PutStatus, int] = {
    PutStatus.PUT_OK: ResponseCode.SUCCESS,
    PutStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
    PutStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutStatus.OS_PAGECACHE_BUSY: ResponseCode.SYSTEM_BUSY,
    PutStatus.UNKNOWN_ERROR: ResponseCode.SYSTEM_ERROR,
}
# Answers for a message that was stored (with its ids and offset), and their remarks.
_STORED_CODES: dict[int, str | None] = {
    ResponseCode.SUCCESS: None,
    ResponseCode.FLUSH_DISK_TIMEOUT: "flush to disk timed out",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "stored, but no slave acknowledged it in syncFlushTimeout",
    ResponseCode.SLAVE_NOT_AVAILABLE: "stored, but no slave is connected or one is far behind",
}
_BORN_HOST = "longboat.born_host"
_DELAY_MARKER = property_marker(Prop.DELAY)
_WAIT_MARKER = property_marker(Prop.WAIT)
_CLUSTER_MARKER = property_marker(Prop.CLUSTER)
# A single send whose property string holds one of these takes the parsed path.
_SPECIAL_MARKERS = tuple(
    marker.decode() for marker in (_DELAY_MARKER, property_marker(Prop.TRAN_MSG))
)
_LOOPBACK = b"\x7f\x00\x00\x01"
# RocketMQ's remark for SERVICE_NOT_AVAILABLE (its clients retry another broker on the code);
# the store's reason follows it.
SERVICE_NOT_AVAILABLE_REMARK = (
    "service not available now. It may be caused by one of the following reasons: the "
    "broker's disk is full, messages are put to the slave, message store has been shut down, etc."
)
BUSY_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"

SendAnswer = RemotingCommand | Awaitable[RemotingCommand]


class SendRefused(Exception):
    """A send the broker will not store; carries the response code and remark."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


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
        cfg = controller.config
        self._extra = {"MSG_REGION": cfg.region_id, "TRACE_ON": "true" if cfg.trace_on else "false"}

    def handle(self, conn: Connection, cmd: RemotingCommand) -> SendAnswer:
        header_cls = (
            SendMessageRequestHeader
            if cmd.code == RequestCode.SEND_MESSAGE
            else SendMessageRequestHeaderV2
        )
        header = header_cls.from_ext(cmd.ext_fields)
        try:
            send = self._prepare(conn, cmd, header)
        except SendRefused as refused:
            return self._answer(cmd, refused.code, refused.remark)
        ctl = self.controller
        msgs = send.messages
        if send.wait and ctl.flush_backlog_full:
            return self._answer(cmd, ResponseCode.SYSTEM_BUSY, BUSY_REMARK)
        if type(msgs) is EncodedBatch:
            result = ctl.store_encoded(msgs)
        else:
            assert type(msgs) is MessageInner
            result = ctl.store_message(msgs)
        if send.wait and (result.durable is not None or ctl.waits_for_slaves):
            return self._after_flush(cmd, send.queue_id, result)
        return self._stored(cmd, send.queue_id, result)

    async def _after_flush(
        self, cmd: RemotingCommand, queue_id: int, result: PutResult
    ) -> RemotingCommand:
        return self._stored(cmd, queue_id, await self.controller.await_durable(result))

    def _stored(self, cmd: RemotingCommand, queue_id: int, result: PutResult) -> RemotingCommand:
        code = _PUT_CODES[result.status]
        if code == ResponseCode.SERVICE_NOT_AVAILABLE:
            return self._answer(cmd, code, f"{SERVICE_NOT_AVAILABLE_REMARK} ({result.error})")
        if code not in _STORED_CODES:
            return self._answer(cmd, code, f"{result.status.value}: {result.error or ''}")
        appended = result.appended
        assert appended is not None  # a stored code
        ext = SendMessageResponseHeader(
            msgId=appended.joined_msg_ids(),
            queueId=queue_id,
            queueOffset=appended.queue_offsets[0],
            **self._extra,
        ).to_ext()
        return cmd.make_response(code, _STORED_CODES[code], ext_fields=ext)

    def _answer(self, cmd: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        return cmd.make_response(code, remark, ext_fields=dict(self._extra))

    # ------------------------------------------------------------------ validation

    def _prepare(
        self, conn: Connection, cmd: RemotingCommand, header: SendMessageRequestHeader
    ) -> _Send:
        ctl = self.controller
        topic = header.topic
        if not ctl.config.broker_permission & PERM_WRITE:
            raise SendRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{ctl.config.broker_name}] sending message is forbidden",
            )
        problem = validate_topic(topic)
        if problem is not None:
            raise SendRefused(ResponseCode.SYSTEM_ERROR, f"{problem} (the sender's error)")
        if topic in NOT_ALLOWED_SEND_TOPICS:
            raise SendRefused(
                ResponseCode.NO_PERMISSION, f"sending message to topic[{topic}] is forbidden"
            )
        config = ctl.topics.create_on_send(topic, header.defaultTopic, header.defaultTopicQueueNums)
        if config is None:
            raise SendRefused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! "
                "(auto-creation is off or the default topic cannot be inherited)",
            )
        if not config.perm & PERM_WRITE:
            raise SendRefused(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
            )
        queue_id = header.queueId
        limit = max(config.read_queue_nums, config.write_queue_nums)
        if queue_id < 0:
            queue_id = random.randrange(max(1, config.write_queue_nums))
        elif queue_id >= limit:
            raise SendRefused(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{queue_id}] is illegal, topic {topic} has {limit} queues",
            )
        sys_flag = header.sysFlag
        if config.topic_filter_type == "MULTI_TAG":
            sys_flag |= MessageSysFlag.MULTI_TAGS
        text = header.properties or ""
        born_host = self._born_host(conn)
        is_batch = cmd.code == RequestCode.SEND_BATCH_MESSAGE or bool(header.batch)
        if not is_batch and _is_plain(topic, text, sys_flag, header):
            message = self._plain_message(cmd, header, text)
            # WAIT=false: the producer does not wait for durability.
            wait = raw_property(message[1], _WAIT_MARKER) != b"false"
            single = _encoded(conn, header, topic, queue_id, sys_flag, born_host, [message])
            return _Send(single, queue_id, wait)
        props = string_to_properties(text)
        props[Prop.CLUSTER] = ctl.config.broker_cluster_name
        # A single message keeps WAIT, as RocketMQ stores it; a batch's own properties are
        # appended to every message of it, which carry their own.
        wait = (
            props.pop(Prop.WAIT, "true") if is_batch else props.get(Prop.WAIT, "true")
        ) != "false"
        half = (
            is_half(props)
            or MessageSysFlag.transaction_type(sys_flag) == MessageSysFlag.TRANSACTION_PREPARED_TYPE
        )
        if half and (is_batch or ctl.config.reject_transaction_message):
            raise SendRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{ctl.config.broker_name}] sending transaction message is forbidden"
                + (" in a batch" if is_batch else " (rejectTransactionMessage=true)"),
            )
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
        messages = self._batch_messages(cmd, topic, props)
        batch = _encoded(conn, header, topic, queue_id, sys_flag, born_host, messages)
        return _Send(batch, queue_id, wait)

    @staticmethod
    def _batch_messages(
        cmd: RemotingCommand, topic: str, batch_props: dict[str, str]
    ) -> list[tuple[bytes, bytes, int]]:
        """The batch's messages with their property bytes kept and the batch's properties
        (CLUSTER and the header's) appended as bytes, as RocketMQ's batch encoder does: no
        message is parsed unless it names DELAY (refused: batches are not scheduled)."""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise SendRefused(ResponseCode.MESSAGE_ILLEGAL, "batches may not go to retry topics")
        try:
            elements = split_batch(cmd.body)
        except ProtocolError as exc:
            raise SendRefused(ResponseCode.MESSAGE_ILLEGAL, f"{exc} (the sender's error)") from None
        if not elements:
            raise SendRefused(ResponseCode.MESSAGE_ILLEGAL, "the batch holds no message")
        _refuse_delayed(batch_props)
        if _DELAY_MARKER in b"\x02".join([props for _, props, _ in elements]):
            for _, props, _ in elements:
                if _DELAY_MARKER in props:
                    _refuse_delayed(string_to_properties(props.decode(errors="replace")))
        appended = properties_to_string(batch_props).encode()
        return [(body, _with_appended(props, appended), flag) for body, props, flag in elements]

    def _plain_message(
        self, cmd: RemotingCommand, header: SendMessageRequestHeader, text: str
    ) -> tuple[bytes, bytes, int]:
        """A plain single message as a batch's message: its property bytes as sent, CLUSTER
        appended (read as the broker's, as in a batch)."""
        # The cluster name is live configuration: read per send, as the parsed path does.
        cluster = _CLUSTER_MARKER + self.controller.config.broker_cluster_name.encode()
        # Header text was decoded strictly, so it always encodes.
        return cmd.body, _with_appended(text.encode(), cluster), header.flag

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


def _with_appended(props: bytes, appended: bytes) -> bytes:
    """A message's property bytes with the broker's appended, as RocketMQ's batch encoder
    writes them (a separator between when needed).  A name in both is stored twice and read
    as the broker's, since readers keep the last occurrence."""
    if not props:
        return appended
    return props + appended if props[-1] == 2 else props + b"\x02" + appended


def _refuse_delayed(props: dict[str, str]) -> None:
    if props.get(Prop.DELAY, "0") not in ("", "0"):
        raise SendRefused(ResponseCode.MESSAGE_ILLEGAL, "messages of a batch may not be delayed")


def install(controller: CoreHost) -> None:
    processor = SendProcessor(controller)
    for code in (
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
    ):
        controller.router.register(code, processor.handle)
