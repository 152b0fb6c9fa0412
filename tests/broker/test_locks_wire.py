"""LOCK_BATCH_MQ / UNLOCK_BATCH_MQ over the wire: exclusivity between clients of a group."""

from __future__ import annotations

from longboat.broker import BrokerController
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.table_bodies import LockBatchRequest, decode_lock_batch_response
from longboat.protocol.types import MessageQueue
from longboat.remoting import RemotingClient

MQS = [MessageQueue("T", "broker-a", q) for q in range(3)]


async def lock(
    client: RemotingClient,
    host: BrokerController,
    client_id: str,
    mqs: list[MessageQueue],
    code: int = RequestCode.LOCK_BATCH_MQ,
) -> list[MessageQueue]:
    body = LockBatchRequest("g", client_id, mqs).to_json()
    response = await client.request(
        host.broker_addr, RemotingCommand.request(code, body=body), timeout=5
    )
    assert response.code == ResponseCode.SUCCESS, response.remark
    return decode_lock_batch_response(response.body) if response.body else []


async def test_each_queue_goes_to_one_client_until_unlocked(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    assert await lock(client, broker, "c1", MQS[:2]) == MQS[:2]
    assert await lock(client, broker, "c2", MQS) == MQS[2:]
    assert await lock(client, broker, "c1", MQS) == MQS[:2]  # a refresh keeps them
    await lock(client, broker, "c1", MQS[:1], RequestCode.UNLOCK_BATCH_MQ)
    assert await lock(client, broker, "c2", MQS) == [MQS[0], MQS[2]]


async def test_a_malformed_body_is_refused_and_the_server_goes_on(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    bad = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=b'{"mqSet": 5}')
    response = await client.request(broker.broker_addr, bad, timeout=5)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert await lock(client, broker, "c1", MQS[:1]) == MQS[:1]
