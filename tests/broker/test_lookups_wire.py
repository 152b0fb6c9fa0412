"""VIEW_MESSAGE_BY_ID and QUERY_MESSAGE over the wire: the stored records come back intact."""

from __future__ import annotations

import time

from longboat.broker import BrokerController
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.message import decode_record, decode_records
from longboat.protocol.properties import Prop
from longboat.remoting import RemotingClient
from longboat.store import MessageInner


async def put(host: BrokerController, topic: str, body: bytes, **props: str) -> str:
    result = await host.put_message(MessageInner(topic, 0, body, dict(props)))
    assert result.ok
    return result.records[0].msg_id


async def test_view_by_offset_id_returns_the_stored_record(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    await put(broker, "T", b"first")
    msg_id = await put(broker, "T", b"second", TAGS="a")
    _, _, offset = decode_offset_msg_id(msg_id)
    cmd = RemotingCommand.request(
        RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset).to_ext()
    )
    response = await client.request(broker.broker_addr, cmd, timeout=5)
    assert response.code == ResponseCode.SUCCESS
    msg = decode_record(response.body)
    assert (msg.body, msg.offset_msg_id, msg.tags) == (b"second", msg_id, "a")

    cmd = RemotingCommand.request(
        RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset + 1).to_ext()
    )
    response = await client.request(broker.broker_addr, cmd, timeout=5)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert str(offset + 1) in (response.remark or "")


async def query(
    client: RemotingClient,
    host: BrokerController,
    topic: str,
    key: str,
    *,
    unique: bool = False,
    max_num: int = 32,
) -> RemotingCommand:
    header = QueryMessageRequestHeader(
        topic=topic,
        key=key,
        maxNum=max_num,
        beginTimestamp=0,
        endTimestamp=int(time.time() * 1000) + 1000,
        uniqueKeyQuery=unique,
    )
    cmd = RemotingCommand.request(RequestCode.QUERY_MESSAGE, header.to_ext())
    return await client.request(host.broker_addr, cmd, timeout=5)


async def test_query_by_key_and_by_unique_key(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    await put(broker, "T", b"a", KEYS="order-1 cust-9", UNIQ_KEY="U1")
    await put(broker, "T", b"b", KEYS="order-2", UNIQ_KEY="U2")
    await put(broker, "T", b"c", KEYS="order-1", UNIQ_KEY="U3")
    await put(broker, "Other", b"d", KEYS="order-1")

    response = await query(client, broker, "T", "order-1")
    assert response.code == ResponseCode.SUCCESS
    header = QueryMessageResponseHeader.from_ext(response.ext_fields)
    assert header.indexLastUpdatePhyoffset == broker.store.max_physical_offset
    assert sorted(m.body for m in decode_records(response.body)) == [b"a", b"c"]

    response = await query(client, broker, "T", "order-1", max_num=1)
    assert len(decode_records(response.body)) == 1

    response = await query(client, broker, "T", "U2", unique=True)
    [msg] = decode_records(response.body)
    assert (msg.body, msg.properties[Prop.UNIQ_KEY]) == (b"b", "U2")


async def test_query_with_no_match_says_so(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    await put(broker, "T", b"a", KEYS="order-1")
    response = await query(client, broker, "T", "order-404")
    assert response.code == ResponseCode.QUERY_NOT_FOUND
    assert "order-404" in (response.remark or "")
    assert "indexLastUpdateTimestamp" in response.ext_fields
