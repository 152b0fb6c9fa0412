"""Light message queues (RIP-28) over the wire: with `enableLmq` and `enableMultiDispatch`, one
send whose INNER_MULTI_DISPATCH names two `%LMQ%` queues is stored once and read by pull from
its topic and from each LMQ, with its offset in each written back (INNER_MULTI_QUEUE_OFFSET);
without them the property is an ordinary one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from longboat.broker import BrokerController
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.batch import BatchItem, encode_batch
from longboat.protocol.table_bodies import decode_kv_table
from longboat.store.lmq import INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET

from .wire import Wire, records, send_header, sent

LMQS = ("%LMQ%room-1", "%LMQ%room-2")


async def test_one_send_is_read_from_each_lmq(
    loopback_broker: Callable[..., Awaitable[BrokerController]],
) -> None:
    broker = await loopback_broker(enable_lmq=True, enable_multi_dispatch=True)
    wire = Wire(broker.broker_addr)
    try:
        # room-2 already has one message: the offsets written back differ per LMQ.
        first = {INNER_MULTI_DISPATCH: LMQS[1]}
        assert (await wire.send("Chat", b"earlier", props=first)).code == ResponseCode.SUCCESS
        both = {INNER_MULTI_DISPATCH: ",".join(LMQS)}
        stored = sent(await wire.send("Chat", b"hello", props=both))
        for lmq, offset in zip(LMQS, (0, 1), strict=True):
            [msg] = records(await wire.pull(lmq, 0, offset, group="readers"))
            assert msg.body == b"hello"
            assert msg.msg_id == stored.msgId  # the one record, not a copy
            assert msg.properties[INNER_MULTI_QUEUE_OFFSET] == "0,1"
        from_topic = records(await wire.pull("Chat", 0, 0, group="readers"))
        assert [m.body for m in from_topic] == [b"earlier", b"hello"]
        assert broker.store.max_offset(LMQS[0], 0) == 1
        assert broker.store.max_offset(LMQS[1], 0) == 2
    finally:
        await wire.close()


async def test_without_lmq_the_property_is_an_ordinary_one(
    loopback_broker: Callable[..., Awaitable[BrokerController]],
) -> None:
    broker = await loopback_broker()
    wire = Wire(broker.broker_addr)
    try:
        props = {INNER_MULTI_DISPATCH: LMQS[0]}
        assert (await wire.send("Chat", b"plain", props=props)).code == ResponseCode.SUCCESS
        [msg] = records(await wire.pull("Chat", 0, 0, group="readers"))
        assert INNER_MULTI_QUEUE_OFFSET not in msg.properties
        assert broker.store.max_offset(LMQS[0], 0) == 0
        answer = await wire.pull(LMQS[0], 0, 0, group="readers")
        assert answer.code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        await wire.close()


async def test_a_pull_held_on_an_lmq_is_woken_by_the_dispatch(
    loopback_broker: Callable[..., Awaitable[BrokerController]],
) -> None:
    broker = await loopback_broker(enable_lmq=True, enable_multi_dispatch=True)
    reader, writer = Wire(broker.broker_addr), Wire(broker.broker_addr)
    try:
        # Suspended far longer than the hold service's re-check: only the dispatch wakes it.
        held = asyncio.ensure_future(
            reader.pull(LMQS[0], 0, 0, group="readers", suspend_ms=60_000, timeout=90.0)
        )
        while broker.hold.held_count == 0:  # the positive signal: it is parked
            assert not held.done(), held.result()
            await asyncio.sleep(0.01)
        props = {INNER_MULTI_DISPATCH: LMQS[0]}
        assert (await writer.send("Chat", b"hello", props=props)).code == ResponseCode.SUCCESS
        [msg] = records(await asyncio.wait_for(held, 30.0))
        assert msg.body == b"hello"
        # Answered by the arrival listener (not by its timer, nor by the periodic re-check,
        # which counts in neither figure).
        assert (broker.hold.woken, broker.hold.expired) == (1, 0)
        # The LMQ's arrival is no second put in the broker's figures.
        info = decode_kv_table((await writer.call(RequestCode.GET_BROKER_RUNTIME_INFO)).body)
        assert info["msgPutTotalTodayNow"] == "1"
    finally:
        await reader.close()
        await writer.close()


async def test_a_batch_is_stored_and_dispatched_to_no_lmq(
    loopback_broker: Callable[..., Awaitable[BrokerController]],
) -> None:
    """RocketMQ 5.3 takes such a batch and dispatches none of it: its batch append writes no
    INNER_MULTI_QUEUE_OFFSET, without which its dispatcher skips the LMQs."""
    broker = await loopback_broker(enable_lmq=True, enable_multi_dispatch=True)
    wire = Wire(broker.broker_addr)
    try:
        props = {INNER_MULTI_DISPATCH: LMQS[0]}
        items = [BatchItem(b"b%d" % i, dict(props)) for i in range(2)]
        header = send_header("Chat", 0, {}, batch=True)
        answer = await wire.call(RequestCode.SEND_BATCH_MESSAGE, header, encode_batch(items))
        assert answer.code == ResponseCode.SUCCESS
        got = records(await wire.pull("Chat", 0, 0, group="readers"))
        assert [m.body for m in got] == [b"b0", b"b1"]
        assert all(m.properties[INNER_MULTI_DISPATCH] == LMQS[0] for m in got)
        assert all(INNER_MULTI_QUEUE_OFFSET not in m.properties for m in got)
        assert broker.store.max_offset(LMQS[0], 0) == 0
    finally:
        await wire.close()
