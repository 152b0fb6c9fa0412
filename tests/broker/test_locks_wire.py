"""LOCK_BATCH_MQ / UNLOCK_BATCH_MQ over the wire: exclusivity between clients of a group."""

from __future__ import annotations

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import LockBatchRequest, decode_lock_batch_response
from longboat.protocol.types import MessageQueue
from longboat.remoting import RemotingClient

from .extras_host import ExtrasHost, client, extras  # noqa: F401

MQS = [MessageQueue("T", "broker-a", q) for q in range(3)]


async def lock(
    client: RemotingClient,  # noqa: F811
    host: ExtrasHost,
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
    extras: ExtrasHost,  # noqa: F811
    client: RemotingClient,  # noqa: F811
) -> None:
    assert await lock(client, extras, "c1", MQS[:2]) == MQS[:2]
    assert await lock(client, extras, "c2", MQS) == MQS[2:]
    assert await lock(client, extras, "c1", MQS) == MQS[:2]  # a refresh keeps them
    await lock(client, extras, "c1", MQS[:1], RequestCode.UNLOCK_BATCH_MQ)
    assert await lock(client, extras, "c2", MQS) == [MQS[0], MQS[2]]


async def test_a_malformed_body_is_refused_and_the_server_goes_on(
    extras: ExtrasHost,  # noqa: F811
    client: RemotingClient,  # noqa: F811
) -> None:
    bad = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=b'{"mqSet": 5}')
    response = await client.request(extras.broker_addr, bad, timeout=5)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert await lock(client, extras, "c1", MQS[:1]) == MQS[:1]
