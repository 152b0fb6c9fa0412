"""Light message queues (RIP-28) over the wire: with `enableLmq` and `enableMultiDispatch`, one
send whose INNER_MULTI_DISPATCH names two `%LMQ%` queues is stored once and read by pull from
its topic and from each LMQ, with its offset in each written back (INNER_MULTI_QUEUE_OFFSET);
without them the property is an ordinary one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from longboat.broker import BrokerController
from longboat.protocol import ResponseCode
from longboat.store.lmq import INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET

from .wire import Wire, records, sent

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
