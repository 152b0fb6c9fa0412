"""Pop consumption over remoting (POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME) against the real broker, with the bare protocol client: the
answers RocketMQ's clients read (POP_CK checkpoints, offset infos), an ack forgetting the
message, a stale checkpoint refused, redelivery after the invisible time with the attempt
counted, a long-polled pop woken by an arrival (beside a held pull) and one answered by a
graceful stop."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson

from longboat.broker import BrokerController
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import SubscriptionGroupConfig
from longboat.protocol.message import MessageExt
from longboat.protocol.pop_headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ExtraInfo,
    NotificationRequestHeader,
    PollingInfoRequestHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from longboat.protocol.properties import Prop

from .wire import Wire, eventually, records, sent

TOPIC = "PopT"
GROUP = "pop-g"


def pop_header(
    *,
    max_msgs: int = 32,
    invisible_ms: int = 60_000,
    poll_ms: int = 0,
    queue_id: int = -1,
    order: bool = False,
) -> PopMessageRequestHeader:
    return PopMessageRequestHeader(
        consumerGroup=GROUP,
        topic=TOPIC,
        queueId=queue_id,
        maxMsgNums=max_msgs,
        invisibleTime=invisible_ms,
        pollTime=poll_ms,
        bornTime=0,
        initMode=0,
        expType="TAG",
        exp="*",
        order=order or None,
    )


async def pop(wire: Wire, **options: Any) -> tuple[RemotingCommand, list[MessageExt]]:
    response = await wire.call(RequestCode.POP_MESSAGE, pop_header(**options))
    # RocketMQ's clients decode the header whatever the code: its fields are always there.
    PopMessageResponseHeader.from_ext(response.ext_fields)
    return response, (records(response) if response.code == ResponseCode.SUCCESS else [])


async def ack(wire: Wire, msg: MessageExt, extra: str | None = None) -> RemotingCommand:
    header = AckMessageRequestHeader(
        GROUP, TOPIC, msg.queue_id, extra or msg.properties[Prop.POP_CK], msg.queue_offset
    )
    return await wire.call(RequestCode.ACK_MESSAGE, header)


async def polling(wire: Wire, count: int) -> bool:
    """Whether POLLING_INFO counts `count` pops (or notifications) parked on the topic."""
    answer = await wire.call(RequestCode.POLLING_INFO, PollingInfoRequestHeader(GROUP, TOPIC, 0))
    return answer.ext_fields["pollingNum"] == str(count)


async def test_pop_ack_and_checkpoints(broker: BrokerController) -> None:
    wire = Wire(broker.broker_addr)
    try:
        for i in range(3):
            assert sent(await wire.send(TOPIC, f"m{i}".encode(), queue_id=0)).queueOffset == i
        response, msgs = await pop(wire)
        assert response.code == ResponseCode.SUCCESS
        assert [m.body for m in msgs] == [b"m0", b"m1", b"m2"]
        header = PopMessageResponseHeader.from_ext(response.ext_fields)
        assert header.startOffsetInfo == "0 0 0"
        assert header.msgOffsetInfo == "0 0 0,1,2"
        ck = ExtraInfo.parse(msgs[1].properties[Prop.POP_CK])
        assert (ck.ck_queue_offset, ck.queue_id, ck.queue_offset) == (0, 0, 1)
        assert (ck.pop_time, ck.invisible_time, ck.revive_qid) == (
            header.popTime,
            60_000,
            header.reviveQid,
        )
        assert ck.broker_name == broker.config.broker_name
        assert all(m.reconsume_times == 0 for m in msgs)

        # Nothing else is visible while they are in flight.
        response, _ = await pop(wire)
        assert response.code == ResponseCode.PULL_NOT_FOUND

        for m in msgs:
            assert (await ack(wire, m)).code == ResponseCode.SUCCESS
        # An acked message's checkpoint is stale: a second ack is refused.
        again = await ack(wire, msgs[0])
        assert again.code == ResponseCode.NO_MESSAGE, again.remark
        assert broker.offsets.query(GROUP, TOPIC, 0) == 3
    finally:
        await wire.close()


async def test_redelivery_after_the_invisible_time_counts_the_attempt(
    broker: BrokerController,
) -> None:
    wire = Wire(broker.broker_addr)
    try:
        await wire.send(TOPIC, b"x", queue_id=0)
        _, [first] = await pop(wire, invisible_ms=200)
        # A long-polled pop gets it back once its invisible time ran out.
        response, [second] = await pop(wire, poll_ms=10_000)
        assert response.code == ResponseCode.SUCCESS
        assert second.body == b"x" and second.reconsume_times == 1
        # The first delivery's checkpoint no longer acks it; the second's does.
        assert (await ack(wire, first)).code == ResponseCode.NO_MESSAGE
        assert (await ack(wire, second)).code == ResponseCode.SUCCESS
    finally:
        await wire.close()


async def test_change_invisible_time_answers_a_new_checkpoint(broker: BrokerController) -> None:
    wire = Wire(broker.broker_addr)
    try:
        await wire.send(TOPIC, b"y", queue_id=0)
        _, [msg] = await pop(wire)
        old = msg.properties[Prop.POP_CK]
        header = ChangeInvisibleTimeRequestHeader(
            GROUP, TOPIC, msg.queue_id, old, msg.queue_offset, 100
        )
        response = await wire.call(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header)
        assert response.code == ResponseCode.SUCCESS, response.remark
        fields = response.ext_fields
        ck = ExtraInfo.parse(old)
        # The client rebuilds its checkpoint from the answer, as the Java client does.
        new = ExtraInfo(
            ck.ck_queue_offset,
            int(fields["popTime"]),
            int(fields["invisibleTime"]),
            int(fields["reviveQid"]),
            ck.retry,
            ck.broker_name,
            ck.queue_id,
            ck.queue_offset,
        )
        response, [back] = await pop(wire, poll_ms=10_000)
        assert back.body == b"y" and back.reconsume_times == 1
        assert (await ack(wire, msg, str(new))).code == ResponseCode.NO_MESSAGE
        assert (await ack(wire, back)).code == ResponseCode.SUCCESS
    finally:
        await wire.close()


async def test_batch_ack_and_a_long_poll_woken_by_an_arrival(broker: BrokerController) -> None:
    wire, sender = Wire(broker.broker_addr), Wire(broker.broker_addr)
    try:
        for i in range(10):
            await wire.send(TOPIC, f"b{i}".encode(), queue_id=0)
        response, msgs = await pop(wire)
        header = PopMessageResponseHeader.from_ext(response.ext_fields)
        bits = sum(1 << m.queue_offset for m in msgs)
        entry = {
            "c": GROUP,
            "t": TOPIC,
            "r": "0",
            "so": 0,
            "q": 0,
            "rq": header.reviveQid,
            "pt": header.popTime,
            "it": header.invisibleTime,
            "b": base64.b64encode(bits.to_bytes(2, "little")).decode(),
        }
        body = orjson.dumps({"brokerName": broker.config.broker_name, "acks": [entry]})
        response = await wire.call(RequestCode.BATCH_ACK_MESSAGE, body=body)
        assert response.code == ResponseCode.SUCCESS
        assert broker.offsets.query(GROUP, TOPIC, 0) == 10

        parked = asyncio.ensure_future(pop(wire, poll_ms=15_000))
        await eventually(lambda: polling(sender, 1), "the pop to park")
        await sender.send(TOPIC, b"late", queue_id=0)
        response, [late] = await parked
        assert late.body == b"late"
    finally:
        await wire.close()
        await sender.close()


async def test_notification_and_polling_info(broker: BrokerController) -> None:
    wire, sender = Wire(broker.broker_addr), Wire(broker.broker_addr)
    try:
        await wire.send(TOPIC, b"first", queue_id=0)
        notify = NotificationRequestHeader(GROUP, TOPIC, -1, 0, 0)
        answer = await wire.call(RequestCode.NOTIFICATION, notify)
        assert (answer.code, answer.ext_fields["hasMsg"]) == (ResponseCode.SUCCESS, "true")
        _, [msg] = await pop(wire)
        await ack(wire, msg)
        # Nothing left: a notification parks (POLLING_INFO counts it) until an arrival.
        parked = asyncio.ensure_future(
            wire.call(
                RequestCode.NOTIFICATION, NotificationRequestHeader(GROUP, TOPIC, -1, 15_000, 0)
            )
        )
        await eventually(lambda: polling(sender, 1), "the notification to park")
        await sender.send(TOPIC, b"second", queue_id=0)
        answer = await parked
        assert answer.ext_fields["hasMsg"] == "true"
        assert await polling(sender, 0)
    finally:
        await wire.close()
        await sender.close()


async def test_orderly_pop_holds_a_queue_until_its_messages_are_acked(
    broker: BrokerController,
) -> None:
    wire = Wire(broker.broker_addr)
    try:
        for body in (b"o1", b"o2"):
            await wire.send(TOPIC, body, queue_id=0)
        response, msgs = await pop(wire, order=True, invisible_ms=60_000)
        assert [m.body for m in msgs] == [b"o1", b"o2"]
        header = PopMessageResponseHeader.from_ext(response.ext_fields)
        assert header.orderCountInfo == "0 qo0%0 0;0 qo0%1 0"
        await wire.send(TOPIC, b"o3", queue_id=0)
        # The queue is held while o1 and o2 are out: o3 waits.
        response, _ = await pop(wire, order=True)
        assert response.code == ResponseCode.PULL_NOT_FOUND
        await ack(wire, msgs[0])
        response, _ = await pop(wire, order=True)
        assert response.code == ResponseCode.PULL_NOT_FOUND
        await ack(wire, msgs[1])
        _, [third] = await pop(wire, order=True)
        assert third.body == b"o3"
    finally:
        await wire.close()


async def test_an_orderly_notification_waits_until_the_held_queue_is_acked(
    broker: BrokerController,
) -> None:
    wire, acker = Wire(broker.broker_addr), Wire(broker.broker_addr)
    try:
        await wire.send(TOPIC, b"h1", queue_id=0)
        _, [first] = await pop(wire, order=True)
        await wire.send(TOPIC, b"h2", queue_id=0)
        # h2 is there to pop, but not for an orderly pop while h1 is out.
        plain = await wire.call(
            RequestCode.NOTIFICATION, NotificationRequestHeader(GROUP, TOPIC, -1, 0, 0)
        )
        assert plain.ext_fields["hasMsg"] == "true"
        orderly = NotificationRequestHeader(GROUP, TOPIC, -1, 15_000, 0, order=True)
        parked = asyncio.ensure_future(wire.call(RequestCode.NOTIFICATION, orderly))
        await eventually(lambda: polling(acker, 1), "the orderly notification to park")
        assert (await ack(acker, first)).code == ResponseCode.SUCCESS
        answer = await parked
        assert answer.ext_fields["hasMsg"] == "true"
        _, [second] = await pop(wire, order=True)
        assert second.body == b"h2"
    finally:
        await wire.close()
        await acker.close()


async def test_past_the_group_s_retries_a_popped_message_is_dead_lettered(
    broker: BrokerController,
) -> None:
    broker.subscription_groups.put(SubscriptionGroupConfig(GROUP, retry_max_times=1))
    wire = Wire(broker.broker_addr)
    try:
        await wire.send(TOPIC, b"poison", queue_id=0)
        _, [first] = await pop(wire, invisible_ms=100)
        _, [second] = await pop(wire, invisible_ms=100, poll_ms=10_000)
        assert (first.reconsume_times, second.reconsume_times) == (0, 1)
        # Two deliveries were all it had (retryMaxTimes + 1): once its time ran out again the
        # next pop dead-letters it instead of delivering it, and finds nothing else.
        response, _ = await pop(wire, poll_ms=1_000)
        assert response.code == ResponseCode.PULL_NOT_FOUND
        assert broker.store.max_offset(f"%DLQ%{GROUP}", 0) == 1
        [dead] = records(await wire.pull(f"%DLQ%{GROUP}", 0, 0, group="dlq-reader"))
        assert dead.body == b"poison" and dead.properties[Prop.RETRY_TOPIC] == TOPIC
    finally:
        await wire.close()


async def test_one_send_wakes_a_parked_pop_and_a_held_pull(broker: BrokerController) -> None:
    """Both kinds of long poll wait in the one hold service: a send wakes the pull held on
    its queue and the pop parked on its topic."""
    popper, puller, sender = (Wire(broker.broker_addr) for _ in range(3))
    try:
        await sender.send(TOPIC, b"first", queue_id=0)
        _, [_first] = await pop(popper)
        parked = asyncio.ensure_future(pop(popper, poll_ms=15_000))
        held = asyncio.ensure_future(puller.pull(TOPIC, 0, 1, group="pull-g", suspend_ms=15_000))
        await eventually(lambda: broker.hold.held_count == 2, "a pop and a pull to wait")
        assert (broker.hold.held_pulls, broker.hold.held_pops) == (1, 1)
        await sender.send(TOPIC, b"both", queue_id=0)
        (_, popped), pulled = await asyncio.gather(parked, held)
        assert [m.body for m in popped] == [b"both"]
        assert [m.body for m in records(pulled)] == [b"both"]
        assert broker.hold.held_count == 0
    finally:
        for wire in (popper, puller, sender):
            await wire.close()


async def test_a_graceful_stop_answers_a_parked_pop_empty(broker: BrokerController) -> None:
    """A pop that found nothing parks in the hold service beside the held pulls (the held
    count includes it), and a graceful stop answers it at once, empty, as it answers them."""
    wire, watcher = Wire(broker.broker_addr), Wire(broker.broker_addr)
    try:
        await wire.send(TOPIC, b"taken", queue_id=0)
        _, [_taken] = await pop(wire)
        parked = asyncio.ensure_future(pop(wire, poll_ms=60_000))
        await eventually(lambda: polling(watcher, 1), "the pop to park")
        assert (broker.hold.held_pops, broker.hold.held_count) == (1, 1)
        await broker.stop()
        response, msgs = await parked  # the call's own timeout (10 s) is the safety net
        assert (response.code, msgs) == (ResponseCode.PULL_NOT_FOUND, [])
        assert broker.hold.held_count == 0
    finally:
        await wire.close()
        await watcher.close()
