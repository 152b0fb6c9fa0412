"""Admin codes over the wire: topic creation and its refusals, the topic table, consume stats,
runtime figures, group settings that send-back then follows."""

from __future__ import annotations

from longboat.broker import BrokerController
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import (
    ConsumerOffsetSerializeWrapper,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)
from longboat.protocol.fastjson import loads
from longboat.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    GetConsumeStatsRequestHeader,
    GetRouteInfoRequestHeader,
)
from longboat.protocol.table_bodies import ConsumeStats
from longboat.protocol.types import MessageQueue
from longboat.remoting import RemotingClient
from longboat.store import MessageInner


async def call(
    client: RemotingClient,
    host: BrokerController,
    code: int,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    cmd = RemotingCommand.request(code, ext, body)
    return await client.request(host.broker_addr, cmd, timeout=5)


async def route_at_name_server(
    client: RemotingClient, broker: BrokerController, topic: str
) -> TopicRouteData | None:
    cmd = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext()
    )
    response = await client.request(broker.config.namesrv_addr, cmd, timeout=5)
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    assert response.code == ResponseCode.SUCCESS, response.remark
    return TopicRouteData.from_json(response.body)


def create(topic: str, queues: int = 4, perm: int = 6) -> dict[str, str]:
    return CreateTopicRequestHeader(
        topic=topic,
        defaultTopic="TBW102",
        readQueueNums=queues,
        writeQueueNums=queues,
        perm=perm,
    ).to_ext()


async def test_create_topic_registers_and_shows_in_the_table(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", 3))
    assert response.code == ResponseCode.SUCCESS, response.remark
    # Registered before the answer: the name server routes the topic to this broker already.
    route = await route_at_name_server(client, broker, "Orders")
    assert route is not None
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [
        ("broker-a", 3, 3)
    ]

    response = await call(client, broker, RequestCode.GET_ALL_TOPIC_CONFIG)
    wrapper = TopicConfigSerializeWrapper.from_json(response.body)
    orders = wrapper.topic_config_table["Orders"]
    assert (orders.read_queue_nums, orders.write_queue_nums, orders.perm) == (3, 3, 6)
    assert wrapper.data_version.counter >= 1

    # Updating is the same call.
    await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Orders", 8, perm=4))
    assert broker.store.topic_configs.get("Orders").write_queue_nums == 8  # type: ignore[union-attr]


RESERVED = ("SCHEDULE_TOPIC_XXXX", "TBW102", "DefaultCluster", "broker-a")


async def test_reserved_and_bad_topic_names_are_refused(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    before = {name: broker.topics.get(name) for name in RESERVED}
    version = broker.topics.wrapper().data_version.counter
    for name in (*RESERVED, "bad topic"):
        response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create(name))
        assert response.code == ResponseCode.INVALID_PARAMETER, name
        assert response.remark
    assert {name: broker.topics.get(name) for name in RESERVED} == before
    assert broker.store.topic_configs.get("bad topic") is None
    response = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("Z", 0))
    assert response.code == ResponseCode.INVALID_PARAMETER
    assert broker.store.topic_configs.get("Z") is None
    # Nothing changed, so nothing new was registered: the name server knows no route to Z.
    assert broker.topics.wrapper().data_version.counter == version
    assert await route_at_name_server(client, broker, "Z") is None


async def test_consume_stats_per_queue(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create("T", 2))
    for i in range(5):
        await broker.put_message(MessageInner("T", i % 2, b"x", {}))
    broker.offsets.commit("g", "T", 0, 2)
    stored_at = broker.store.store_time_at("T", 0, 1)

    response = await call(
        client, broker, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader("g").to_ext()
    )
    stats = ConsumeStats.from_json(response.body)
    q0, q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
    assert set(stats.offset_table) == {q0, q1}
    assert stats.offset_table[q0].broker_offset == 3
    assert stats.offset_table[q0].consumer_offset == 2
    assert stats.offset_table[q0].last_timestamp == stored_at
    assert (stats.offset_table[q1].broker_offset, stats.offset_table[q1].consumer_offset) == (2, 0)
    # fastjson's object keys: Java's ConsumeStats decoder reads nothing else.
    assert response.body.startswith(b'{"consumeTps":0.0,"offsetTable":{{"brokerName":')

    response = await call(
        client,
        broker,
        RequestCode.GET_CONSUME_STATS,
        GetConsumeStatsRequestHeader("nobody", "T").to_ext(),
    )
    stats = ConsumeStats.from_json(response.body)
    assert {w.consumer_offset for w in stats.offset_table.values()} == {0}


async def test_runtime_info_is_a_kv_table(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    response = await call(client, broker, RequestCode.GET_BROKER_RUNTIME_INFO)
    table = loads(response.body)["table"]
    assert table["brokerVersionDesc"] == "V4_9_8"
    assert table["dispatchBehindBytes"] == "0"
    assert int(table["commitLogMaxOffset"]) == broker.store.max_physical_offset


async def test_group_settings_are_stored_and_followed_by_send_back(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    body = SubscriptionGroupConfig("g", retry_queue_nums=0).to_json()
    response = await call(
        client, broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body
    )
    assert response.code == ResponseCode.SUCCESS
    assert broker.subscription_groups.get("g").retry_queue_nums == 0
    saved = loads(broker.subscription_groups.path.read_bytes())
    assert saved["subscriptionGroupTable"]["g"]["retryQueueNums"] == 0

    # retryQueueNums 0: RocketMQ's "no retries" switch — accepted and dropped.
    result = await broker.put_message(MessageInner("T", 0, b"x", {}))
    header = ConsumerSendMsgBackRequestHeader(result.records[0].commit_log_offset, "g", 0)
    response = await call(client, broker, RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext())
    assert response.code == ResponseCode.SUCCESS
    assert broker.store.topics() == ["T"]


async def test_a_slave_can_copy_every_group_setting_and_offset(
    broker: BrokerController,
    client: RemotingClient,
) -> None:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG and GET_ALL_CONSUMER_OFFSET, what SlaveSynchronize
    asks a master for: both tables whole, in RocketMQ's shapes."""
    body = SubscriptionGroupConfig("g", retry_max_times=3).to_json()
    await call(client, broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
    response = await call(client, broker, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    groups = SubscriptionGroupWrapper.from_json(response.body)
    assert groups.subscription_group_table["g"].retry_max_times == 3
    assert groups.data_version == broker.subscription_groups.wrapper().data_version
    assert groups.data_version.counter == 1

    broker.offsets.commit("g", "T", 0, 7)
    broker.offsets.commit("g", "T", 3, 2)
    broker.offsets.commit("h", "U", 1, 5)
    response = await call(client, broker, RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert ConsumerOffsetSerializeWrapper.from_json(response.body).offset_table == {
        "T@g": {0: 7, 3: 2},
        "U@h": {1: 5},
    }
    # What a Java master writes (queue ids unquoted) reads the same.
    java = b'{"offsetTable":{"T@g":{0:7,3:2},"U@h":{1:5}}}'
    assert ConsumerOffsetSerializeWrapper.from_json(java).offset_table == {
        "T@g": {0: 7, 3: 2},
        "U@h": {1: 5},
    }
