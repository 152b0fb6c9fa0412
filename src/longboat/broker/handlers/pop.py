"""Pop consumption over remoting (RIP-19): POP_MESSAGE 200050, ACK_MESSAGE 200051,
CHANGE_MESSAGE_INVISIBLETIME 200053, NOTIFICATION 200054, POLLING_INFO 200055,
BATCH_ACK_MESSAGE 200151, and QUERY_ASSIGNMENT 400
(a client that lets the broker assign: every queue, in POP mode).

Everything a pop does is the core's (`core/pop.py`): the one pop state the gRPC endpoint
serves too, so a group may mix remoting pop consumers (the Java client's
`setClientRebalance(false)`, Longboat's `PopConsumer`) with RocketMQ 5 gRPC ones; redelivery
after the invisible time, dead-lettering past the group's retries and orderly pop are the
core's.  This module decodes, calls it and encodes RocketMQ's answers:

* a pop answers SUCCESS with the messages as records (as a pull does), each carrying its
  checkpoint in `POP_CK` (`protocol/pop_headers.ExtraInfo`), its deliveries so far in
  RECONSUMETIMES, and the per-queue `startOffsetInfo` / `msgOffsetInfo` (plus
  `orderCountInfo` for an orderly pop) in the header; PULL_NOT_FOUND when the long poll
  (`pollTime`) ran out empty.  Parked pops of both protocols wait in the broker's hold
  service beside the held pulls (`state/hold.py`).
* the checkpoint's reviveQid carries the low 31 bits of the core's handle generation, so an
  ack of a delivery that was redelivered or re-armed since is refused as stale (NO_MESSAGE)
  instead of acking the newer delivery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from longboat.broker.core.message_filter import SQL92, message_filter
from longboat.broker.core.pop import REMOTING_SEQ_MASK, Popped, PopRequest, parse_handle
from longboat.broker.core.refusal import Refusal
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.errors import ProtocolError
from longboat.protocol.message import encode_message
from longboat.protocol.pop_headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    order_count_info,
    parse_batch_ack_body,
    queue_info,
    topic_mark,
)
from longboat.protocol.properties import Prop
from longboat.protocol.tags import TagExpression
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX, validate_group
from longboat.protocol.types import PERM_READ
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

# RocketMQ's broker hands out at most this many messages per pop.
MAX_POP_MSGS = 32
# A long poll answers this much before the client's own timeout (pollTime + its margin).
POLL_RESERVE_S = 0.1


class PopProcessor:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.pop = controller.pop

    async def pop_message(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = PopMessageRequestHeader.from_ext(cmd.ext_fields)
        ctl = self.controller
        if problem := validate_group(h.consumerGroup):
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{problem} (the client's error)")
        try:
            ctl.admission.read_topic(h.topic, None if h.queueId < 0 else h.queueId)
            flt = message_filter(
                h.expType,
                h.exp,
                property_filter_enabled=ctl.config.enable_property_filter,
            )
        except Refusal as refusal:
            return cmd.make_response(refusal.code, refusal.remark)
        tags = TagExpression.parse("*" if (h.expType or "").upper() == SQL92 else h.exp)
        fifo = self._orderly(h.consumerGroup, h.order)
        wanted = PopRequest(
            h.consumerGroup,
            h.topic,
            max_msgs=max(1, min(h.maxMsgNums, MAX_POP_MSGS)),
            expression=tags,
            invisible_ms=h.invisibleTime,
            sql=flt.sql,
            queue_id=h.queueId,
            fifo=fifo,
        )
        popped = await self.pop.pop_waiting(
            wanted, wait_s=max(0.0, h.pollTime / 1000 - POLL_RESERVE_S)
        )
        pop_time = int(self.pop.now() * 1000)
        if not popped:
            header = PopMessageResponseHeader(pop_time, h.invisibleTime, 0, 0)
            return cmd.make_response(
                ResponseCode.PULL_NOT_FOUND, "no new message", ext_fields=header.to_ext()
            )
        return self._found(cmd, h, popped, pop_time, fifo)

    def _found(
        self,
        cmd: RemotingCommand,
        h: PopMessageRequestHeader,
        popped: list[Popped],
        pop_time: int,
        fifo: bool,
    ) -> RemotingCommand:
        popped = sorted(popped, key=lambda p: (p.message.queue_id, p.message.queue_offset))
        revive_qid = popped[0].seq & REMOTING_SEQ_MASK
        by_queue: dict[int, list[int]] = {}
        for p in popped:
            by_queue.setdefault(p.message.queue_id, []).append(p.message.queue_offset)
        start = {q: offsets[0] for q, offsets in by_queue.items()}
        broker = self.controller.config.broker_name
        body = bytearray()
        for p in popped:
            ext = p.message
            ext.reconsume_times = p.attempt - 1
            ext.properties[Prop.POP_CK] = str(
                ExtraInfo(
                    start[ext.queue_id],
                    pop_time,
                    h.invisibleTime,
                    revive_qid,
                    topic_mark(ext.topic),
                    broker,
                    ext.queue_id,
                    ext.queue_offset,
                )
            )
            body += encode_message(ext)
        order_counts = (
            order_count_info(
                h.topic,
                [(p.message.queue_id, p.message.queue_offset, p.attempt - 1) for p in popped],
            )
            if fifo
            else None
        )
        header = PopMessageResponseHeader(
            pop_time,
            h.invisibleTime,
            revive_qid,
            0,
            queue_info(h.topic, {q: str(o) for q, o in start.items()}),
            queue_info(h.topic, {q: ",".join(map(str, o)) for q, o in by_queue.items()}),
            order_counts,
        )
        return cmd.make_response(ext_fields=header.to_ext(), body=bytes(body))

    def _orderly(self, group: str, order: bool | None) -> bool:
        """An orderly pop (or notification): the request's `order`, or the group's setting."""
        return bool(order) or self.controller.subscription_groups.get(group).consume_message_orderly

    async def notification(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """NOTIFICATION (200054): whether the group has a message to pop, long-polled up to
        pollTime, parked as pops are; an orderly one (as `_orderly` decides for a pop) does
        not count a queue an orderly pop holds, as RocketMQ's does not."""
        h = NotificationRequestHeader.from_ext(cmd.ext_fields)
        try:
            self.controller.admission.read_topic(h.topic, None if h.queueId < 0 else h.queueId)
        except Refusal as refusal:
            return cmd.make_response(refusal.code, refusal.remark)
        wait_s = max(0.0, h.pollTime / 1000 - POLL_RESERVE_S)
        fifo = self._orderly(h.consumerGroup, h.order)
        has = await self.pop.notify_waiting(h.consumerGroup, h.topic, h.queueId, wait_s, fifo)
        return cmd.make_response(ext_fields=NotificationResponseHeader(has).to_ext())

    def polling_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """POLLING_INFO (200055): how many pops (and notifications) wait on the topic."""
        h = PollingInfoRequestHeader.from_ext(cmd.ext_fields)
        try:
            self.controller.admission.read_topic(h.topic, None if h.queueId < 0 else h.queueId)
        except Refusal as refusal:
            return cmd.make_response(refusal.code, refusal.remark)
        waiting = self.pop.hold.parked_pops(h.topic)
        return cmd.make_response(ext_fields=PollingInfoResponseHeader(waiting).to_ext())

    def query_assignment(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """QUERY_ASSIGNMENT (400), which a client rebalancing on the broker asks (the Java
        client's `setClientRebalance(false)`): the whole topic here, in POP mode (queue -1).
        RocketMQ answers PULL unless an operator set the group's mode to POP; a client asks
        only to consume without assigning queues itself, which is what pop does.  A group's
        retry topic gets no queue: redeliveries come back through the topic's own pops."""
        try:
            topic = str(orjson.loads(cmd.body or b"{}")["topic"])
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"bad assignment query: {exc}")
        assignments = []
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            try:
                self.controller.admission.read_topic(topic)
            except Refusal as refusal:
                return cmd.make_response(refusal.code, refusal.remark)
            queue = {
                "topic": topic,
                "brokerName": self.controller.config.broker_name,
                "queueId": -1,
            }
            assignments.append({"messageQueue": queue, "mode": "POP", "attachments": {}})
        return cmd.make_response(body=orjson.dumps({"messageQueueAssignments": assignments}))

    async def ack_message(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = AckMessageRequestHeader.from_ext(cmd.ext_fields)
        try:
            ei = ExtraInfo.parse(h.extraInfo)
        except ProtocolError as exc:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{exc} (the client's error)")
        response = self._answer(
            cmd,
            h.topic,
            lambda: self._ack(h.consumerGroup, h.topic, h.queueId, h.offset, ei.revive_qid),
        )
        if response.code == ResponseCode.SUCCESS:
            await self.pop.acks_durable()
        return response

    def _ack(self, group: str, topic: str, queue_id: int, offset: int, revive_qid: int) -> None:
        self.controller.admission.known_topic(topic, PERM_READ)
        handle = self.pop.handle_for(group, topic, queue_id, offset, revive_qid)
        self.pop.ack(group, topic, handle)

    async def batch_ack(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """Every offset of every entry acked; the ones no longer in flight under their
        checkpoint are skipped, as RocketMQ skips acks of a checkpoint already revived."""
        try:
            acks = parse_batch_ack_body(cmd.body or b"")
        except ProtocolError as exc:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{exc} (the client's error)")
        if not acks:
            return cmd.make_response(ResponseCode.NO_MESSAGE, "the batch names no ack")
        topics = set()
        for entry in acks:
            for offset in entry.offsets:
                try:
                    self._ack(
                        entry.consumer_group, entry.topic, entry.queue_id, offset, entry.revive_qid
                    )
                except Refusal:
                    continue
            topics.add(entry.topic)
        self.pop.maybe_compact()
        for topic in topics:
            self.pop.hold.wake_pops(topic)
        await self.pop.acks_durable()
        return cmd.make_response()

    def change_invisible_time(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = ChangeInvisibleTimeRequestHeader.from_ext(cmd.ext_fields)
        try:
            ei = ExtraInfo.parse(h.extraInfo)
            self.controller.admission.known_topic(h.topic, PERM_READ)
            handle = self.pop.handle_for(
                h.consumerGroup, h.topic, h.queueId, h.offset, ei.revive_qid
            )
            new_handle = self.pop.change_invisible(
                h.consumerGroup, h.topic, handle, h.invisibleTime
            )
        except ProtocolError as exc:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{exc} (the client's error)")
        except Refusal as refusal:
            return cmd.make_response(refusal.code, refusal.remark)
        self.pop.wake_later(h.topic, h.invisibleTime / 1000)
        seq = parse_handle(new_handle)[2]
        header = ChangeInvisibleTimeResponseHeader(
            int(self.pop.now() * 1000), h.invisibleTime, seq & REMOTING_SEQ_MASK
        )
        return cmd.make_response(ext_fields=header.to_ext())

    def _answer(self, cmd: RemotingCommand, topic: str, act: Callable[[], None]) -> RemotingCommand:
        try:
            act()
        except Refusal as refusal:
            return cmd.make_response(refusal.code, refusal.remark)
        self.pop.maybe_compact()
        # An ack can release an orderly queue's next message: parked pops look again.
        self.pop.hold.wake_pops(topic)
        return cmd.make_response()


def install(controller: CoreHost) -> None:
    processor = PopProcessor(controller)
    controller.router.register_all(
        {
            RequestCode.QUERY_ASSIGNMENT: processor.query_assignment,
            RequestCode.POP_MESSAGE: processor.pop_message,
            RequestCode.ACK_MESSAGE: processor.ack_message,
            RequestCode.BATCH_ACK_MESSAGE: processor.batch_ack,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME: processor.change_invisible_time,
            RequestCode.NOTIFICATION: processor.notification,
            RequestCode.POLLING_INFO: processor.polling_info,
        }
    )
