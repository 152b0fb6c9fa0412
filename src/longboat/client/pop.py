"""The pop consumer (RIP-19): the broker, not the client, decides who gets which message.

`receive()` pops messages of a topic for the group: each is invisible to the whole group for
`invisible_time` and must be acked (`ack()`) before that time runs out, or the broker hands
it out again (to any member, its `reconsume_times` one higher), until the group's retries are
spent and it goes to `%DLQ%<group>`.  `change_invisible_time()` asks for more time (or, with
0, for a delivery again at once).  No queues are assigned and no offsets committed by the
client: members come and go without a rebalance, and a slow member holds only the messages
it received.  The broker keeps this state (and its acks, across a restart); a group may mix
these members with RocketMQ 5 gRPC clients and the Java client's pop mode.

    consumer = PopConsumer("billing", namesrv_addrs="127.0.0.1:9876")
    await consumer.start()
    for msg in await consumer.receive("Orders", invisible_time=30.0):
        await bill(msg.body)
        await consumer.ack(msg)
    await consumer.shutdown()

A broker answers a pop at once when it has messages; otherwise it holds the pop up to
`wait` seconds for one to arrive.  Each broker serving the topic is asked in turn.

`PopConsumer(group, orderly=True)` pops orderly (RocketMQ's `order` flag), for messages a
producer keeps in order by queue (`sharding_key=`): a queue's messages come in queue order,
and nothing more of a queue is handed out while a message popped from it is still out (not
acked, its invisible time not run out).  One left unacked comes back first when its time runs
out, `reconsume_times` counted, followed by the later ones of its queue that were out with
it.  So ack a queue's messages in the order received and, when one fails, leave the rest of
that queue's batch unacked too: they come back behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

from longboat.client._internal.route import TopicRoute
from longboat.client.config import ClientConfig
from longboat.client.errors import ClientUsageError, NoRouteError, broker_error
from longboat.client.lifecycle import InstanceUser
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.errors import ProtocolError
from longboat.protocol.header_fields import Header
from longboat.protocol.message import MessageExt, decode_records
from longboat.protocol.pop_headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    order_count_key,
    parse_order_count_info,
    parse_queue_info,
    topic_mark,
)
from longboat.protocol.properties import Prop
from longboat.protocol.topic_names import validate_group

# A long-polled pop's answer may take `wait` plus this before the request times out.
ANSWER_MARGIN_S = 5.0


@dataclass(slots=True)
class PoppedMessage:
    """A received message and the checkpoint that acks it (`ack`, `change_invisible_time`)."""

    message: MessageExt
    broker_addr: str
    checkpoint: str

    @property
    def body(self) -> bytes:
        return self.message.body

    @property
    def reconsume_times(self) -> int:
        """Deliveries before this one (0 the first time)."""
        return self.message.reconsume_times


class PopConsumer(InstanceUser):
    """One member of a pop-consuming group; with `orderly`, every pop is an orderly one (see
    the module docstring)."""

    left_open_consequence = "received messages not acked come back after their invisible time"

    def __init__(
        self,
        group: str,
        *,
        orderly: bool = False,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
    ) -> None:
        super().__init__(config, namesrv_addrs)
        if problem := validate_group(group):
            raise ClientUsageError(f"invalid consumer group: {problem}")
        self.group = group
        self.orderly = orderly
        self._turn = 0

    async def receive(
        self,
        topic: str,
        *,
        max_messages: int = 16,
        invisible_time: float = 60.0,
        wait: float = 20.0,
        expression: str = "*",
    ) -> list[PoppedMessage]:
        """Up to `max_messages` (at most 32) messages matching the tag `expression`,
        invisible to the group for `invisible_time` seconds; [] when none came in `wait`."""
        if not 1 <= max_messages <= 32:
            raise ClientUsageError("max_messages must be between 1 and 32")
        instance = self.instance
        route = await instance.route(topic)
        addrs = _readable_brokers(route)
        if not addrs:
            raise NoRouteError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"no broker serves topic {topic!r} for reading",
                request_code=RequestCode.POP_MESSAGE,
            )
        header = PopMessageRequestHeader(
            consumerGroup=self.group,
            topic=topic,
            queueId=-1,
            maxMsgNums=max_messages,
            invisibleTime=int(invisible_time * 1000),
            pollTime=int(wait * 1000),
            bornTime=0,
            initMode=0,
            expType="TAG",
            exp=expression,
            order=self.orderly or None,
        )
        self._turn = (self._turn + 1) % len(addrs)
        broker_name, addr = addrs[self._turn]
        response = await self._call(
            addr,
            RequestCode.POP_MESSAGE,
            header,
            broker_name=broker_name,
            # RocketMQ's brokers answer a long poll that saw nothing with POLLING_TIMEOUT.
            ok=(ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.POLLING_TIMEOUT),
            timeout=wait + ANSWER_MARGIN_S,
        )
        if response.code != ResponseCode.SUCCESS:
            return []
        answer = PopMessageResponseHeader.from_ext(response.ext_fields)
        try:
            starts = parse_queue_info(answer.startOffsetInfo)
            counts = parse_order_count_info(answer.orderCountInfo) if self.orderly else {}
        except ProtocolError as bad:
            raise broker_error(
                ResponseCode.SYSTEM_ERROR, str(bad), addr=addr, request_code=RequestCode.POP_MESSAGE
            ) from None
        popped: list[PoppedMessage] = []
        for m in decode_records(response.body or b""):
            if counts:
                _count_deliveries(m, counts)
            popped.append(PoppedMessage(m, addr, _checkpoint(m, answer, starts, broker_name)))
        return popped

    async def ack(self, popped: PoppedMessage) -> None:
        """Done with the message; BrokerError (NO_MESSAGE) when its invisible time ran out and
        it was handed out again (or re-armed) since: the new delivery is not acked."""
        msg = popped.message
        header = AckMessageRequestHeader(
            self.group, msg.topic, msg.queue_id, popped.checkpoint, msg.queue_offset
        )
        broker_name = ExtraInfo.parse(popped.checkpoint).broker_name
        await self._call(
            popped.broker_addr, RequestCode.ACK_MESSAGE, header, broker_name=broker_name
        )

    async def change_invisible_time(self, popped: PoppedMessage, invisible_time: float) -> None:
        """Invisible for `invisible_time` seconds from now (0: delivered again at once);
        `popped` now carries the new checkpoint, the old one no longer acks."""
        msg = popped.message
        old = ExtraInfo.parse(popped.checkpoint)
        header = ChangeInvisibleTimeRequestHeader(
            self.group,
            msg.topic,
            msg.queue_id,
            popped.checkpoint,
            msg.queue_offset,
            int(invisible_time * 1000),
        )
        response = await self._call(
            popped.broker_addr,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
            header,
            broker_name=old.broker_name,
        )
        answer = ChangeInvisibleTimeResponseHeader.from_ext(response.ext_fields)
        popped.checkpoint = str(
            ExtraInfo(
                old.ck_queue_offset,
                answer.popTime,
                answer.invisibleTime,
                answer.reviveQid,
                old.retry,
                old.broker_name,
                old.queue_id,
                old.queue_offset,
            )
        )

    async def _call(
        self,
        addr: str,
        code: int,
        header: Header,
        *,
        broker_name: str,
        ok: tuple[int, ...] = (ResponseCode.SUCCESS,),
        timeout: float | None = None,
    ) -> RemotingCommand:
        cmd = self.instance.api._command(code, header.to_ext(), broker_name=broker_name)
        response = await self.instance.api.invoke(addr, cmd, timeout)
        if response.code not in ok:
            raise broker_error(response.code, response.remark, addr=addr, request_code=code)
        return response


def _readable_brokers(route: TopicRoute) -> list[tuple[str, str]]:
    """(broker name, master address) of each broker serving `route` for reading."""
    names = sorted({mq.broker_name for mq in route.subscribe_queues})
    return [(name, addr) for name in names if (addr := route.master_addr(name))]


def _count_deliveries(msg: MessageExt, counts: dict[tuple[str, str], int]) -> None:
    """An orderly pop's message: its reconsume times as `orderCountInfo` counts them, by its
    queue offset, else by its queue, as RocketMQ's Java client reads them (RocketMQ's broker
    re-reads the queue, so the stored message says 0; Longboat's broker counted it already)."""
    mark = topic_mark(msg.topic)
    count = counts.get(
        (mark, order_count_key(msg.queue_id, msg.queue_offset)),
        counts.get((mark, str(msg.queue_id)), 0),
    )
    if count > 0:
        msg.reconsume_times = count


def _checkpoint(
    msg: MessageExt,
    answer: PopMessageResponseHeader,
    starts: dict[tuple[str, int], str],
    broker_name: str,
) -> str:
    """The message's checkpoint: its `POP_CK` when the broker set one (Longboat's does),
    else built from the answer as RocketMQ's Java client does (processPopResponse: RocketMQ's
    brokers leave it to the client), from its queue's start offset in `startOffsetInfo`."""
    if (checkpoint := msg.properties.get(Prop.POP_CK)) is not None:
        return checkpoint
    mark = topic_mark(msg.topic)
    return str(
        ExtraInfo(
            int(starts.get((mark, msg.queue_id), msg.queue_offset)),
            answer.popTime,
            answer.invisibleTime,
            answer.reviveQid,
            mark,
            broker_name,
            msg.queue_id,
            msg.queue_offset,
        )
    )
