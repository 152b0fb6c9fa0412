"""CONSUMER_SEND_MSG_BACK over the wire: retry copies through the delay ladder with rising
reconsume times and the properties clients need, then straight to the DLQ."""

from __future__ import annotations

import asyncio

from longboat.broker import BrokerController
from longboat.broker.core.retry_policy import route_retry_send
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import SubscriptionGroupConfig
from longboat.protocol.headers import ConsumerSendMsgBackRequestHeader
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.remoting import RemotingClient
from longboat.store import MessageInner

GROUP = "g1"
RETRY = f"%RETRY%{GROUP}"
DLQ = f"%DLQ%{GROUP}"


async def send_back(
    client: RemotingClient,
    host: BrokerController,
    msg: MessageExt,
    *,
    delay_level: int = 0,
    max_times: int | None = 3,
    version: int | None = None,
) -> RemotingCommand:
    header = ConsumerSendMsgBackRequestHeader(
        offset=msg.commit_log_offset,
        group=GROUP,
        delayLevel=delay_level,
        originMsgId=msg.offset_msg_id,
        originTopic=msg.topic,
        maxReconsumeTimes=max_times,
    )
    cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext())
    if version is not None:
        cmd.version = version
    return await client.request(host.broker_addr, cmd, timeout=10)


async def produce(host: BrokerController, topic: str = "T") -> MessageExt:
    props = {Prop.TAGS: "TagA", Prop.KEYS: "order-1", Prop.UNIQ_KEY: "U1"}
    result = await host.put_message(MessageInner(topic, 0, b"payload", props))
    assert result.ok
    msg = host.store.read_message(result.records[0].commit_log_offset)
    assert msg is not None
    return msg


async def wait_queue(
    broker: BrokerController, topic: str, queue_id: int, count: int, timeout: float = 20
) -> None:
    """Until `topic`/`queue_id` holds `count` messages (event-driven: an arrival listener)."""
    arrived = asyncio.Event()

    def listener(t: str, q: int, *_: object) -> None:
        if (t, q) == (topic, queue_id):
            arrived.set()

    broker.add_arrival_listener(listener)
    async with asyncio.timeout(timeout):
        while broker.store.max_offset(topic, queue_id) < count:
            arrived.clear()
            await arrived.wait()


def message_at(host: BrokerController, topic: str, offset: int) -> MessageExt:
    got = host.store.get_messages(topic, 0, offset, 1)
    assert got.queue_offsets == [offset], got.status
    return decode_record(got.records[0])


async def test_retries_climb_the_ladder_then_land_in_the_dlq_at_once(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    original = await produce(broker)
    current = original
    for attempt in range(3):
        response = await send_back(client, broker, current)
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert broker.store.max_offset(RETRY, 0) == attempt  # delayed, not there yet
        await wait_queue(broker, RETRY, 0, attempt + 1)
        retried = message_at(broker, RETRY, attempt)
        assert retried.body == b"payload"
        assert retried.reconsume_times == attempt + 1
        assert retried.properties[Prop.RETRY_TOPIC] == "T"
        assert retried.properties[Prop.ORIGIN_MESSAGE_ID] == original.offset_msg_id
        assert retried.properties[Prop.TAGS] == "TagA"
        assert retried.properties[Prop.UNIQ_KEY] == "U1"
        assert Prop.DELAY not in retried.properties
        # Level 3 + reconsume times: each wait is one rung longer than the one before.
        waited = retried.store_timestamp - current.store_timestamp
        assert waited >= broker.delay_levels.delay_ms(3 + attempt)
        current = retried

    response = await send_back(client, broker, current)
    assert response.code == ResponseCode.SUCCESS
    # Stored before the answer: no trip through the schedule topic (RocketMQ #2724).
    assert broker.store.max_offset(DLQ, 0) == 1
    dead = message_at(broker, DLQ, 0)
    assert dead.reconsume_times == 4
    assert dead.properties[Prop.RETRY_TOPIC] == "T"
    assert dead.properties[Prop.ORIGIN_MESSAGE_ID] == original.offset_msg_id
    assert Prop.DELAY not in dead.properties
    assert broker.topics.get(DLQ) is not None


async def test_negative_level_goes_straight_to_the_dlq(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    msg = await produce(broker)
    response = await send_back(client, broker, msg, delay_level=-1)
    assert response.code == ResponseCode.SUCCESS
    assert broker.store.max_offset(DLQ, 0) == 1
    assert broker.store.max_offset(RETRY, 0) == 0


async def test_explicit_level_is_honoured(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    msg = await produce(broker)
    assert (await send_back(client, broker, msg, delay_level=1)).code == ResponseCode.SUCCESS
    await wait_queue(broker, RETRY, 0, 1)
    retried = message_at(broker, RETRY, 0)
    assert retried.store_timestamp - msg.store_timestamp >= broker.delay_levels.delay_ms(1)


async def test_old_clients_get_the_group_limit(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    """Below version 3.4.9 the header's limit is ignored: the group's retryMaxTimes rules."""
    broker.subscription_groups.put(SubscriptionGroupConfig(GROUP, retry_max_times=0))
    msg = await produce(broker)
    response = await send_back(client, broker, msg, max_times=16, version=100)
    assert response.code == ResponseCode.SUCCESS
    assert broker.store.max_offset(DLQ, 0) == 1


async def test_unknown_offset_is_a_system_error(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    await produce(broker)
    bogus = MessageExt(topic="T", body=b"", commit_log_offset=123_456)
    response = await send_back(client, broker, bogus)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "123456" in (response.remark or "")


async def test_client_produced_retry_copies_go_to_the_dlq_once_exhausted(
    broker: BrokerController,
) -> None:
    """The send-side rule for clients whose send-back failed (header j >= l)."""

    def copy() -> MessageInner:
        return MessageInner(RETRY, 0, b"x", {Prop.DELAY: "3", Prop.RETRY_TOPIC: "T"})

    fresh = copy()
    assert not route_retry_send(
        broker, fresh, reconsume_times=2, max_reconsume_header=16, request_version=409
    )
    assert fresh.topic == RETRY

    done = copy()
    assert route_retry_send(
        broker, done, reconsume_times=16, max_reconsume_header=16, request_version=409
    )
    assert (done.topic, done.queue_id) == (DLQ, 0)
    assert Prop.DELAY not in done.properties
    assert broker.topics.get(DLQ) is not None

    # An old client's header limit is ignored: the group's 16 rules.
    old = copy()
    assert not route_retry_send(
        broker, old, reconsume_times=5, max_reconsume_header=1, request_version=100
    )

    other = MessageInner("T", 0, b"x", {})
    assert not route_retry_send(
        broker, other, reconsume_times=99, max_reconsume_header=1, request_version=409
    )
