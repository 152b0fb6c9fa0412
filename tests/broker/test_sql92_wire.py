"""SQL92 subscriptions over the wire: a pull (subscription in the request, or from the group's
heartbeat) returns only the messages whose properties match, a held pull is woken only by a
matching arrival, and a selector the broker cannot serve is refused with RocketMQ's codes —
at CHECK_CLIENT_CONFIG (what Java's consumer asks at start) and at pull time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import orjson

from conftest import Cluster
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.bodies import SubscriptionData

from .wire import Wire, eventually, pulled, records, sent

TOPIC = "SqlTopic"
LONG_MS = 30_000


async def send_priced(w: Wire, prices: list[str | None]) -> None:
    for i, price in enumerate(prices):
        props = {"i": str(i)} | ({} if price is None else {"price": price})
        sent(await w.send(TOPIC, f"m{i}".encode(), props=props))


async def test_pull_returns_only_messages_whose_properties_match(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    w = Wire(loopback_cluster(enable_property_filter=True).broker_addr)
    await send_priced(w, ["5", "50", None, "abc", "500", "20"])
    response = await w.pull(
        TOPIC, 0, 0, subscription="price BETWEEN 10 AND 100", expression_type="SQL92"
    )
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in records(response)] == [b"m1", b"m5"]
    assert pulled(response).nextBeginOffset == 6
    # Nothing matches past offset 2: the scanned entries are skipped, not redelivered.
    none = await w.pull(TOPIC, 0, 2, subscription="price > 1000", expression_type="SQL92")
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert pulled(none).nextBeginOffset == 6
    await w.close()


async def test_heartbeat_subscription_by_sql_filters_the_groups_pulls(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    w = Wire(loopback_cluster(enable_property_filter=True).broker_addr)
    await send_priced(w, ["1", None, "3"])
    await w.heartbeat("c1", "g-sql", TOPIC, sql="price IS NULL OR price > 2")
    response = await w.pull(TOPIC, 0, 0, group="g-sql", subscription=None, sub_version=1)
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in records(response)] == [b"m1", b"m2"]
    await w.close()


async def test_held_sql_pull_is_woken_only_by_a_matching_arrival(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(enable_property_filter=True)
    consumer, producer = Wire(cluster.broker_addr), Wire(cluster.broker_addr)
    await send_priced(producer, ["1"])
    pull = asyncio.ensure_future(
        consumer.pull(
            TOPIC, 0, 1, subscription="region = 'eu'", expression_type="SQL92", suspend_ms=LONG_MS
        )
    )
    await eventually(lambda: cluster.broker.hold.held_count == 1, "the pull to be held")
    sent(await producer.send(TOPIC, b"us", props={"region": "us"}))
    sent(await producer.send(TOPIC, b"none", props={}))
    assert not pull.done()
    assert cluster.broker.hold.held_count == 1
    sent(await producer.send(TOPIC, b"eu", props={"region": "eu"}))
    response = await asyncio.wait_for(pull, 5)
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in records(response)] == [b"eu"]
    await consumer.close()
    await producer.close()


async def check_client_config(w: Wire, expression_type: str, expression: str) -> tuple[int, str]:
    sub = SubscriptionData(TOPIC, expression, 1, expression_type)
    body = orjson.dumps({"clientId": "c1", "group": "g", "subscriptionData": sub.to_dict()})
    response = await w.call(RequestCode.CHECK_CLIENT_CONFIG, body=body)
    return response.code, response.remark or ""


async def test_a_bad_selector_is_refused_at_subscribe_and_at_pull(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    w = Wire(loopback_cluster(enable_property_filter=True).broker_addr)
    await send_priced(w, ["1"])
    assert await check_client_config(w, "SQL92", "price > 1") == (ResponseCode.SUCCESS, "")
    assert (await check_client_config(w, "TAG", "a || b"))[0] == ResponseCode.SUCCESS
    code, remark = await check_client_config(w, "SQL92", "price > 'x'")
    assert code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "cannot be compared" in remark
    refused = await w.pull(TOPIC, 0, 0, subscription="price >", expression_type="SQL92")
    assert refused.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "Unexpected" in (refused.remark or "")
    # The broker keeps serving.
    ok = await w.pull(TOPIC, 0, 0, subscription="price = 1", expression_type="SQL92")
    assert [m.body for m in records(ok)] == [b"m0"]
    await w.close()


async def test_sql_needs_enable_property_filter(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    w = Wire(loopback_cluster().broker_addr)
    await send_priced(w, ["1"])
    code, remark = await check_client_config(w, "SQL92", "price > 1")
    assert code == ResponseCode.SYSTEM_ERROR
    assert "enablePropertyFilter" in remark
    refused = await w.pull(TOPIC, 0, 0, subscription="price > 1", expression_type="SQL92")
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert (await w.pull(TOPIC, 0, 0)).code == ResponseCode.SUCCESS  # tags still served
    await w.close()
