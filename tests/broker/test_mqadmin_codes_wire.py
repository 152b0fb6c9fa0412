"""The request codes `mqadmin` sends beyond the client's own, over the wire: topic stats, topic
deletion, who consumes a topic, the broker-driven offset reset (and its notice to members),
the broker's settings, and the runtime figures `clusterList` prints.  Real name server and
broker on loopback, bare protocol client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from conftest import Cluster
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.fastjson import loads
from longboat.protocol.headers import (
    CreateTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    ResetOffsetRequestHeader,
    TopicRequestHeader,
)
from longboat.protocol.table_bodies import (
    decode_group_list,
    decode_offset_table,
    decode_topic_stats,
)
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection, Router

from .test_core_wire import route
from .wire import Wire, eventually, pull_header, records, sent

TOPIC = "AdminTopic"


async def create_topic(w: Wire, topic: str, queues: int) -> None:
    header = CreateTopicRequestHeader(topic, "TBW102", queues, queues, 6)
    response = await w.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def test_topic_stats_give_each_queue_its_range_and_last_store_time(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await create_topic(w, TOPIC, 3)
    for i in range(5):
        sent(await w.send(TOPIC, b"m%d" % i, queue_id=i % 2))
    last_q0 = cluster.broker.store.store_time_at(TOPIC, 0, 2)

    response = await w.call(RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(TOPIC))
    assert response.code == ResponseCode.SUCCESS, response.remark
    stats = decode_topic_stats(response.body)
    name = cluster.config.broker_name
    assert sorted(stats) == [MessageQueue(TOPIC, name, q) for q in range(3)]
    q0, q1, q2 = (stats[MessageQueue(TOPIC, name, q)] for q in range(3))
    assert (q0.min_offset, q0.max_offset, q0.last_update_timestamp) == (0, 3, last_q0)
    assert (q1.min_offset, q1.max_offset) == (0, 2)
    assert (q2.min_offset, q2.max_offset, q2.last_update_timestamp) == (0, 0, 0)
    # Keyed by MessageQueue objects, the only form Java's TopicStatsTable decoder reads.
    assert response.body.startswith(b'{"offsetTable":{{"brokerName":')

    response = await w.call(RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader("Nope"))
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert "Nope" in (response.remark or "")
    await w.close()


async def test_one_topics_config_is_answered_as_rocketmq5_does(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """GET_TOPIC_CONFIG (351): mqadmin 5 reads it before a topic's or a group's figures."""
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await create_topic(w, TOPIC, 3)
    response = await w.call(RequestCode.GET_TOPIC_CONFIG, TopicRequestHeader(TOPIC))
    assert response.code == ResponseCode.SUCCESS, response.remark
    config = loads(response.body)
    assert (config["topicName"], config["readQueueNums"], config["writeQueueNums"]) == (TOPIC, 3, 3)
    assert "mappingDetail" not in config  # not a static topic
    response = await w.call(RequestCode.GET_TOPIC_CONFIG, TopicRequestHeader("Nope"))
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert "Nope" in (response.remark or "")
    await w.close()


async def test_deleting_a_topic_drops_its_route_and_refuses_system_topics(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await create_topic(w, TOPIC, 2)
    sent(await w.send(TOPIC, b"kept"))
    assert await route(cluster.namesrv_addr, TOPIC) is not None

    response = await w.call(RequestCode.DELETE_TOPIC_IN_BROKER, TopicRequestHeader(TOPIC))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert cluster.broker.topics.get(TOPIC) is None
    assert await route(cluster.namesrv_addr, TOPIC) is None  # re-registered before answering
    stats = await w.call(RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(TOPIC))
    assert stats.code == ResponseCode.TOPIC_NOT_EXIST

    # Created again, the queue continues where it was: offsets stay monotonic.
    await create_topic(w, TOPIC, 2)
    assert cluster.broker.store.max_offset(TOPIC, 0) == 1

    for system in ("SCHEDULE_TOPIC_XXXX", "TBW102", "bad topic"):
        response = await w.call(RequestCode.DELETE_TOPIC_IN_BROKER, TopicRequestHeader(system))
        assert response.code == ResponseCode.INVALID_PARAMETER, system
        assert response.remark
    assert cluster.broker.topics.get("SCHEDULE_TOPIC_XXXX") is not None
    await w.close()


async def test_topic_consumers_are_subscribers_and_groups_with_offsets(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await create_topic(w, TOPIC, 1)
    await w.heartbeat("client-1", "live-group", TOPIC)
    await w.heartbeat("client-1", "other-topic-group", "Elsewhere")
    await w.commit("offline-group", TOPIC, 0, 0)

    response = await w.call(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, TopicRequestHeader(TOPIC))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert decode_group_list(response.body) == ["live-group", "offline-group"]
    await w.close()


class ResetNotices:
    """A member's side: records RESET_CONSUMER_CLIENT_OFFSET notices."""

    def __init__(self) -> None:
        self.router = Router("test member")
        self.router.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._reset)
        self.received: list[RemotingCommand] = []

    def _reset(self, conn: Connection, cmd: RemotingCommand) -> None:
        self.received.append(cmd)


async def test_broker_driven_reset_moves_offsets_and_tells_every_member(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    admin = Wire(cluster.broker_addr)
    await create_topic(admin, TOPIC, 2)
    for i in range(3):
        sent(await admin.send(TOPIC, b"early-%d" % i, queue_id=0))
    await asyncio.sleep(0.02)
    between_ms = int(time.time() * 1000)
    await asyncio.sleep(0.02)
    for i in range(2):
        sent(await admin.send(TOPIC, b"late-%d" % i, queue_id=0))
    sent(await admin.send(TOPIC, b"late-q1", queue_id=1))
    await admin.commit("g", TOPIC, 0, 5)

    # No member online: RocketMQ's answer, on which mqadmin commits offsets itself.
    to_time = ResetOffsetRequestHeader(TOPIC, "g", between_ms, isForce=True)
    response = await admin.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, to_time)
    assert response.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert cluster.broker.offsets.query("g", TOPIC, 0) == 5

    member_side = ResetNotices()
    member = Wire(cluster.broker_addr, member_side.router)
    await member.heartbeat("member-1", "g", TOPIC)
    response = await admin.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, to_time)
    assert response.code == ResponseCode.SUCCESS, response.remark
    name = cluster.config.broker_name
    q0, q1 = MessageQueue(TOPIC, name, 0), MessageQueue(TOPIC, name, 1)
    # Queue 0: the first message stored after the time; queue 1 had no offset: moved anyway.
    assert decode_offset_table(response.body) == {q0: 3, q1: 0}
    assert cluster.broker.offsets.query("g", TOPIC, 0) == 3
    await eventually(lambda: len(member_side.received) == 1, "the member's reset notice")
    notice = member_side.received[0]
    assert decode_offset_table(notice.body) == {q0: 3, q1: 0}
    header = ResetOffsetRequestHeader.from_ext(notice.ext_fields)
    assert (header.topic, header.group, header.timestamp) == (TOPIC, "g", between_ms)
    pulled = await admin.pull(TOPIC, 0, 3, group="g")
    assert [m.body for m in records(pulled)] == [b"late-0", b"late-1"]

    # Without force a queue only moves back: "to the end" leaves queue 0 where it is.
    to_end = ResetOffsetRequestHeader(TOPIC, "g", -1, isForce=False)
    response = await admin.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, to_end)
    assert decode_offset_table(response.body) == {q0: 3, q1: 0}

    unknown = ResetOffsetRequestHeader("Nope", "g", -1, isForce=True)
    response = await admin.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, unknown)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "Nope" in (response.remark or "")
    await member.close()
    await admin.close()


async def test_broker_config_is_every_setting_in_broker_conf_form(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(auto_create_topic=False)
    w = Wire(cluster.broker_addr)
    response = await w.call(RequestCode.GET_BROKER_CONFIG)
    assert response.code == ResponseCode.SUCCESS, response.remark
    lines = response.body.decode().splitlines()
    settings = dict(line.split("=", 1) for line in lines)
    assert settings["brokerName"] == cluster.config.broker_name
    assert settings["brokerClusterName"] == "DefaultCluster"
    assert settings["autoCreateTopicEnable"] == "false"
    assert settings["listenPort"] == cluster.broker_addr.rsplit(":", 1)[1]  # bound, not 0
    assert settings["flushDiskType"] == "ASYNC_FLUSH"
    version = GetBrokerConfigResponseHeader.from_ext(response.ext_fields).version
    assert loads(version)["timestamp"] > 0
    await w.close()


async def test_runtime_info_counts_stored_and_pulled_messages(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    await create_topic(w, TOPIC, 1)
    for i in range(3):
        sent(await w.send(TOPIC, b"one-%d" % i))
    sent(await w.send_batch(TOPIC, [b"b%d" % i for i in range(4)]))
    pulled = await w.call(RequestCode.PULL_MESSAGE, pull_header(TOPIC, 0, 0, max_nums=5))
    assert len(records(pulled)) == 5

    response = await w.call(RequestCode.GET_BROKER_RUNTIME_INFO)
    table = loads(response.body)["table"]
    assert table["brokerVersionDesc"] == "V4_9_8"
    assert int(table["commitLogMaxOffset"]) == cluster.broker.store.max_physical_offset
    assert table["msgPutTotalTodayNow"] == "7"  # a batch of 4 counts 4
    assert table["msgGetTotalTodayNow"] == "5"
    assert table["msgPutTotalTodayMorning"] == table["msgPutTotalYesterdayMorning"] == "0"
    put_tps = [float(x) for x in table["putTps"].split()]
    # The 600 s window holds the sends however slow the run; the 10 s one may not.
    assert len(put_tps) == 3 and put_tps[2] > 0
    assert len(table["getTransferedTps"].split()) == 3
    first_stored = cluster.broker.store.store_time_at(TOPIC, 0, 0)
    assert int(table["earliestMessageTimeStamp"]) == first_stored
    assert 0 < float(table["commitLogDiskRatio"]) < 1
    assert table["sendThreadPoolQueueSize"] == "0"
    await w.close()
