"""Route bodies in both JSON dialects become the same publish and subscribe queues.

Old name servers (and Longboat's, for clients older than 4.9.4) write `brokerAddrs` with bare
integer keys, as fastjson does; newer ones quote them.  The client must read both and build
its queue lists by RocketMQ's rules (write perm + master for publishing, read perm for
subscribing, sorted), because rebalancing clients must agree on the queue order.
"""

from __future__ import annotations

from longboat.client._internal.route import TopicRoute
from longboat.protocol.bodies import TopicRouteData
from longboat.protocol.types import MessageQueue

# Byte for byte the old-style body a Java 4.9 name server writes (remoting.md 7.1), two brokers.
OLD_STYLE = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.6:10911",1:"10.0.0.16:10911"},'
    b'"brokerName":"broker-b","cluster":"DefaultCluster"},'
    b'{"brokerAddrs":{0:"10.0.0.5:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
    b'"filterServerTable":{},"queueDatas":['
    b'{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSynFlag":0,"writeQueueNums":2},'
    b'{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
# What ali-ons was served in the captured session (standard JSON, quoted keys).
STANDARD = (
    b'{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,'
    b'"topicSysFlag":0}],"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a",'
    b'"brokerAddrs":{"0":"127.0.0.1:20911"}}],"filterServerTable":{}}'
)


def test_old_style_bare_int_keys_parse_to_master_addresses() -> None:
    route = TopicRoute.build("T", TopicRouteData.from_json(OLD_STYLE))
    assert route.master_addr("broker-a") == "10.0.0.5:10911"
    assert route.master_addr("broker-b") == "10.0.0.6:10911"
    brokers = {b.broker_name: b.broker_addrs for b in route.brokers}
    assert brokers["broker-b"] == {0: "10.0.0.6:10911", 1: "10.0.0.16:10911"}
    # Sorted by broker, then queue id, whatever order the name server used.
    assert route.publish_queues == [
        *(MessageQueue("T", "broker-a", i) for i in range(4)),
        *(MessageQueue("T", "broker-b", i) for i in range(2)),
    ]
    assert route.subscribe_queues == route.publish_queues


def test_both_dialects_give_the_same_route() -> None:
    standard = TopicRouteData.from_json(STANDARD)
    bare = TopicRouteData.from_json(STANDARD.replace(b'{"0":', b"{0:"))
    assert TopicRoute.build("T", standard).same_as(TopicRoute.build("T", bare))
    assert TopicRoute.build("T", bare).master_addr("broker-a") == "127.0.0.1:20911"


def test_permissions_and_missing_master() -> None:
    data = TopicRouteData.from_json(
        b'{"brokerDatas":[{"brokerAddrs":{1:"10.0.0.9:10911"},"brokerName":"slave-only",'
        b'"cluster":"c"},{"brokerAddrs":{0:"10.0.0.5:10911"},"brokerName":"ro","cluster":"c"}],'
        b'"filterServerTable":{},"queueDatas":['
        b'{"brokerName":"slave-only","perm":6,"readQueueNums":2,"writeQueueNums":2},'
        b'{"brokerName":"ro","perm":4,"readQueueNums":3,"writeQueueNums":3}]}'
    )
    route = TopicRoute.build("T", data)
    # A broker without master takes no writes; a read-only topic neither.
    assert route.publish_queues == []
    assert route.subscribe_queues == [
        *(MessageQueue("T", "ro", i) for i in range(3)),
        *(MessageQueue("T", "slave-only", i) for i in range(2)),
    ]


def test_default_topic_route_is_relabelled_and_capped() -> None:
    tbw = TopicRouteData.from_json(
        b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911"},"brokerName":"a","cluster":"c"}],'
        b'"filterServerTable":{},"queueDatas":[{"brokerName":"a","perm":7,"readQueueNums":8,'
        b'"writeQueueNums":8}]}'
    )
    route = TopicRoute.build("NewTopic", tbw, default_queue_nums=4)
    assert route.via_default_topic
    assert route.publish_queues == [MessageQueue("NewTopic", "a", i) for i in range(4)]
