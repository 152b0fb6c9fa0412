"""Timer messages and recall from the Python client, against the real broker on loopback:
`Message(deliver_at=...)` arrives no earlier than then, `Producer.recall` keeps one from
arriving at all, and the broker's refusals come back as RocketMQ answers them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from longboat.client import BrokerError, ClientUsageError, Message
from longboat.client.producer import Producer
from longboat.protocol import ResponseCode
from longboat.protocol.properties import Prop

from .client_e2e import config_for, read_topic, unique
from .test_producer_e2e import make_topic


async def test_a_timer_arrives_on_time_and_a_recalled_one_never(namesrv: str) -> None:
    topic = await make_topic(namesrv, queues=2)
    soon = datetime.now(UTC) + timedelta(seconds=1.5)
    later = datetime.now(UTC) + timedelta(seconds=3)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        on_time = await producer.send(Message(topic, b"on time", deliver_at=soon))
        recalled = await producer.send(Message(topic, b"recalled", deliver_at=later))
        await producer.send(Message(topic, b"control", deliver_at=later))
        assert on_time.recall_handle and recalled.recall_handle
        assert await producer.recall(topic, recalled.recall_handle) == recalled.msg_id
        got = await read_topic(namesrv, topic, 2)
        assert sorted(m.body for m in got) == [b"control", b"on time"]
        [first] = [m for m in got if m.body == b"on time"]
        assert first.store_timestamp >= int(soon.timestamp() * 1000)
        # Delivered already: RocketMQ's ILLEGAL_OPERATION and remark.
        with pytest.raises(BrokerError, match="recall failed, timestamp invalid") as refused:
            await producer.recall(topic, on_time.recall_handle)
        assert refused.value.code == ResponseCode.ILLEGAL_OPERATION
        with pytest.raises(ClientUsageError, match="recall handle is invalid"):
            await producer.recall(topic, "no handle")


def test_deliver_at_wants_an_aware_time_and_no_delay_beside_it() -> None:
    with pytest.raises(ClientUsageError, match="aware"):
        Message("T", b"x", deliver_at=datetime.now())
    with pytest.raises(ClientUsageError, match="not two"):
        Message("T", b"x", deliver_at=1, delay=timedelta(seconds=1))
    at = datetime(2030, 1, 1, tzinfo=UTC)
    sent = Message("T", b"x", deliver_at=at).wire_properties()
    assert sent["TIMER_DELIVER_MS"] == str(int(at.timestamp() * 1000))


async def test_a_batch_holding_a_timer_is_refused_and_stores_nothing(namesrv: str) -> None:
    """A batch is one append to one queue: its timers would be delivered at once, before
    their time (RocketMQ stores them so), so the broker refuses the batch, and the client a
    `deliver_at` in one before sending.  A message that was a timer, delivered and sent on
    (its TIMER_OUT_MS says so), is no timer: its batch is stored."""
    topic = await make_topic(namesrv, queues=1)
    later = datetime.now(UTC) + timedelta(seconds=30)
    in_ms = str(int(later.timestamp() * 1000))
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        with pytest.raises(ClientUsageError, match="cannot be timers"):
            await producer.send_batch([Message(topic, b"t", deliver_at=later)])
        for timers in [
            {Prop.TIMER_DELIVER_MS: in_ms},  # the same due time for both
            {Prop.TIMER_DELAY_SEC: "5"},
        ]:
            batch = [Message(topic, b"t-1", properties=timers), Message(topic, b"t-2")]
            batch.append(Message(topic, b"t-3", properties={Prop.TIMER_DELAY_SEC: "9"}))
            with pytest.raises(BrokerError, match="may not be timers") as refused:
                await producer.send_own_batch(batch)
            assert refused.value.code == ResponseCode.MESSAGE_ILLEGAL
        sent_on = {Prop.TIMER_DELIVER_MS: in_ms, Prop.TIMER_OUT_MS: in_ms}
        await producer.send_own_batch(
            [Message(topic, b"plain"), Message(topic, b"sent on", properties=sent_on)]
        )
    got = await read_topic(namesrv, topic, 2)
    assert [m.body for m in got] == [b"plain", b"sent on"]
