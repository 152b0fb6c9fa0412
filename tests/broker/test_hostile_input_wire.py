"""Hostile and malformed input over the wire: each is answered with a RocketMQ response code
and a remark naming what was wrong, nothing of it is kept, and the connection (and the broker)
goes on serving.

Frames are written by hand on a raw socket where our own encoder could not produce them (a
non-scalar ext value, a header that is not JSON).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import struct
from collections.abc import Callable
from typing import Any

import orjson
import psutil
import pytest

from conftest import Cluster, LoopThread
from longboat.broker import BrokerConfig, BrokerController
from longboat.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import (
    ConsumerData,
    HeartbeatData,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfigSerializeWrapper,
)
from longboat.protocol.codes import SerializeType
from longboat.protocol.headers import CreateTopicRequestHeader, GetConsumeStatsRequestHeader

from .wire import Wire, pulled, send_header


def create_topic_ext(topic: str, queues: int) -> dict[str, str]:
    return CreateTopicRequestHeader(
        topic=topic, defaultTopic="TBW102", readQueueNums=queues, writeQueueNums=queues, perm=6
    ).to_ext()


def topic_table(cluster: Cluster, wire: Wire) -> dict[str, Any]:
    response = cluster.runner.run(wire.call(RequestCode.GET_ALL_TOPIC_CONFIG))
    return TopicConfigSerializeWrapper.from_json(response.body).topic_config_table


class RawPeer:
    """A socket that writes frames as given and reads answers with our decoder."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = FrameDecoder()

    @classmethod
    async def open(cls, addr: str) -> RawPeer:
        host, _, port = addr.rpartition(":")
        return cls(*await asyncio.open_connection(host, int(port)))

    async def exchange(self, frame: bytes, timeout: float = 10.0) -> RemotingCommand | None:
        """Write one frame; its answer, or None when the broker closed the connection."""
        self.writer.write(frame)
        async with asyncio.timeout(timeout):
            while (cmd := self.decoder.next_command()) is None:
                data = await self.reader.read(65536)
                if not data:
                    return None
                self.decoder.feed(data)
        return cmd

    def close(self) -> None:
        self.writer.close()


def json_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    raw = orjson.dumps(header)
    return struct.pack(">iI", 4 + len(raw) + len(body), len(raw)) + raw + body


def request_header(code: int, opaque: int, ext: dict[str, Any]) -> dict[str, Any]:
    return {"code": code, "flag": 0, "language": "JAVA", "opaque": opaque, "version": 399,
            "extFields": ext, "serializeTypeCurrentRPC": "JSON"}  # fmt: skip


def rocketmq_frame(code: int, opaque: int, ext_bytes: bytes) -> bytes:
    """A ROCKETMQ-serialized request whose ext section is `ext_bytes` as given."""
    header = (
        struct.pack(">hBhii", code, 0, 399, opaque, 0)
        + struct.pack(">i", 0)
        + struct.pack(">i", len(ext_bytes))
        + ext_bytes
    )
    marker = (int(SerializeType.ROCKETMQ) << 24) | len(header)
    return struct.pack(">iI", 4 + len(header), marker) + header


def query_max_offset(opaque: int) -> bytes:
    ext = {"topic": "TBW102", "queueId": "0"}
    return json_frame(request_header(RequestCode.GET_MAX_OFFSET, opaque, ext))


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


@pytest.fixture
def cluster(loopback_cluster: Callable[..., Cluster]) -> Cluster:
    return loopback_cluster(max_topic_queue_nums=64)


@pytest.fixture
def wire(cluster: Cluster) -> Any:
    wire = Wire(cluster.broker_addr)
    yield wire
    cluster.runner.run(wire.close())


def test_a_topic_with_too_many_queues_is_refused_naming_the_limit(
    cluster: Cluster, wire: Wire
) -> None:
    run = cluster.runner.run
    for queues in (65, 2_000_000_000):
        response = run(
            wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext("Q", queues))
        )
        assert response.code == ResponseCode.INVALID_PARAMETER
        assert "maxTopicQueueNums" in (response.remark or "") and "64" in (response.remark or "")
    assert "Q" not in topic_table(cluster, wire)
    ok = run(wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext("Q", 64)))
    assert ok.code == ResponseCode.SUCCESS, ok.remark
    # A group's retry queues are topic queues too.
    group = SubscriptionGroupConfig(group_name="g", retry_queue_nums=1_000_000)
    response = run(wire.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.to_json()))
    assert response.code == ResponseCode.INVALID_PARAMETER and "maxTopicQueueNums" in (
        response.remark or ""
    )


def test_consume_stats_stay_bounded_for_a_topic_table_written_before_the_cap(
    cluster: Cluster, wire: Wire
) -> None:
    # A topic table on disk may predate the cap: GET_CONSUME_STATS still loops at most it.
    config = TopicConfigSerializeWrapper.from_json(
        cluster.runner.run(wire.call(RequestCode.GET_ALL_TOPIC_CONFIG)).body
    ).topic_config_table["TBW102"]
    huge = type(config)("Huge", 50_000_000, 50_000_000, 6)
    cluster.broker.store.topic_configs.put(huge)
    header = GetConsumeStatsRequestHeader(consumerGroup="g", topic="Huge")
    response = cluster.runner.run(wire.call(RequestCode.GET_CONSUME_STATS, header, timeout=10))
    assert response.code == ResponseCode.SUCCESS
    assert response.body.count(b'"queueId"') == 64


@pytest.mark.parametrize("name", ["abc\n", "a b", " ", "x" * 128, "a/../b"])
def test_illegal_topic_names_are_refused_and_leave_nothing(
    cluster: Cluster, wire: Wire, name: str
) -> None:
    run = cluster.runner.run
    created = run(wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext(name, 4)))
    assert created.code == ResponseCode.INVALID_PARAMETER and "topic name" in (created.remark or "")
    sent = run(wire.call(RequestCode.SEND_MESSAGE_V2, send_header(name, 0, {}), b"x"))
    assert sent.code == ResponseCode.INVALID_PARAMETER and "topic name" in (sent.remark or "")
    assert name not in topic_table(cluster, wire)
    assert name not in cluster.broker.store.topics()


@pytest.mark.parametrize("name", ["rmq_sys_mine", "SCHEDULE_TOPIC_XXXX", "TBW102"])
def test_reserved_topic_names_cannot_be_created(cluster: Cluster, wire: Wire, name: str) -> None:
    response = cluster.runner.run(
        wire.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext(name, 4))
    )
    assert response.code == ResponseCode.INVALID_PARAMETER and "system topic" in (
        response.remark or ""
    )


@pytest.mark.parametrize("group", ["g\n", "g/../../x", "", "g" * 256])
def test_a_heartbeat_with_an_illegal_group_name_creates_nothing(
    cluster: Cluster, wire: Wire, group: str
) -> None:
    data = HeartbeatData(
        "client-1",
        consumer_data_set=[
            ConsumerData(group, subscription_data_set=[SubscriptionData.of("T", "*", 1)])
        ],
    )
    response = cluster.runner.run(wire.call(RequestCode.HEART_BEAT, body=data.to_json()))
    assert response.code == ResponseCode.INVALID_PARAMETER and "group" in (response.remark or "")
    assert not any(t.startswith("%RETRY%") for t in topic_table(cluster, wire))


def test_numbers_beyond_their_java_type_are_answered_not_crashed(
    cluster: Cluster, wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    run = cluster.runner.run
    ext = send_header("T", 0, {}).to_ext()
    ext["f"] = str(2**40)  # sysFlag: a Java Integer
    with caplog.at_level(logging.ERROR, "longboat"):
        response = run(wire.call(RequestCode.SEND_MESSAGE_V2, ext, b"x"))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "<f>" in (response.remark or "") and "int range" in (response.remark or "")
    assert "Traceback" not in caplog.text and not caplog.records
    ok = run(wire.send("T", b"still serving"))
    assert ok.code == ResponseCode.SUCCESS


def test_a_non_scalar_ext_value_is_answered_and_the_connection_kept(cluster: Cluster) -> None:
    async def scenario() -> tuple[RemotingCommand | None, RemotingCommand | None]:
        peer = await RawPeer.open(cluster.broker_addr)
        try:
            bad = json_frame(
                request_header(RequestCode.GET_MAX_OFFSET, 7, {"topic": ["T"], "queueId": "0"})
            )
            answer = await peer.exchange(bad)
            after = await peer.exchange(query_max_offset(8))
            return answer, after
        finally:
            peer.close()

    answer, after = cluster.runner.run(scenario())
    assert answer is not None, "the broker dropped the connection instead of answering"
    assert (answer.opaque, answer.code) == (7, ResponseCode.SYSTEM_ERROR)
    assert answer.is_response and "ext field" in (answer.remark or "")
    assert after is not None and (after.opaque, after.code) == (8, ResponseCode.SUCCESS)


def test_a_peers_first_bad_request_is_logged_at_info_the_rest_at_debug(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> RemotingCommand | None:
        peer = await RawPeer.open(cluster.broker_addr)
        try:
            for opaque in (21, 22, 23):
                bad = rocketmq_frame(RequestCode.GET_MAX_OFFSET, opaque, b"\x7f\xff" + b"abcd")
                answer = await peer.exchange(bad)
                assert answer is not None and answer.opaque == opaque
            return await peer.exchange(query_max_offset(24))
        finally:
            peer.close()

    with caplog.at_level(logging.DEBUG, "longboat.remoting"):
        after = cluster.runner.run(scenario())
    assert after is not None and after.code == ResponseCode.SUCCESS  # every one was handled
    levels = [r.levelno for r in caplog.records if "bad request" in r.getMessage()]
    assert levels == [logging.INFO, logging.DEBUG, logging.DEBUG]


def test_a_binary_header_with_bad_ext_lengths_is_answered(cluster: Cluster) -> None:
    async def scenario() -> tuple[RemotingCommand | None, RemotingCommand | None]:
        peer = await RawPeer.open(cluster.broker_addr)
        try:
            # A key announcing 0x7fff bytes inside a 6-byte ext section.
            bad = rocketmq_frame(RequestCode.GET_MAX_OFFSET, 11, b"\x7f\xff" + b"abcd")
            return await peer.exchange(bad), await peer.exchange(query_max_offset(12))
        finally:
            peer.close()

    answer, after = cluster.runner.run(scenario())
    assert answer is not None and (answer.opaque, answer.code) == (11, ResponseCode.SYSTEM_ERROR)
    assert answer.serialize_type is SerializeType.ROCKETMQ
    assert after is not None and (after.opaque, after.code) == (12, ResponseCode.SUCCESS)


def test_a_header_that_is_not_json_closes_only_that_connection(
    cluster: Cluster, wire: Wire
) -> None:
    async def scenario() -> RemotingCommand | None:
        peer = await RawPeer.open(cluster.broker_addr)
        try:
            raw = b"{not json"
            return await peer.exchange(struct.pack(">iI", 4 + len(raw), len(raw)) + raw)
        finally:
            peer.close()

    assert cluster.runner.run(scenario()) is None  # nothing names the request: closed
    assert cluster.runner.run(wire.send("T", b"others still served")).code == 0


def test_servers_listen_on_loopback_unless_an_address_is_configured(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    assert BrokerConfig().bind_host == "127.0.0.1"
    assert BrokerConfig().advertised_ip == "127.0.0.1"
    exposed = BrokerConfig(broker_ip1="10.0.0.7")
    assert (exposed.bind_host, exposed.advertised_ip) == ("0.0.0.0", "10.0.0.7")
    chosen = BrokerConfig(listen_host="10.0.0.8")
    assert (chosen.bind_host, chosen.advertised_ip) == ("10.0.0.8", "10.0.0.8")
    runner = LoopThread()
    broker = BrokerController(
        BrokerConfig(
            listen_port=0,
            grpc_listen_port=0,
            store_path_root_dir=tmp_path,
            mapped_file_size_commit_log=1 << 20,
        )
    )
    try:
        with caplog.at_level(logging.INFO, "longboat.remoting"):
            runner.run(broker.start())
        assert broker.server.host == "127.0.0.1"
        # The gRPC endpoint too.
        assert broker.grpc is not None
        # This process's sockets only: another test's server may hold the same port number
        # on another address meanwhile.
        listening = {
            c.laddr.ip
            for c in psutil.Process().net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == broker.grpc.port
        }
        assert listening and all(is_loopback(ip) for ip in listening), listening
        assert broker.broker_addr.startswith("127.0.0.1:")
        lines = [r.getMessage() for r in caplog.records if "listening" in r.getMessage()]
        assert len(lines) == 1 and "only" in lines[0] and "brokerIP1" in lines[0], lines
    finally:
        runner.run(broker.stop())
        runner.close()


def test_a_filtered_pull_scans_a_bounded_stretch_whatever_maxmsgnums_says(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    # Small consume-queue files (1,000 entries) so the file bound shows too.
    cluster = loopback_cluster(mapped_file_size_consume_queue=1000 * 20)
    wire = Wire(cluster.broker_addr)
    run = cluster.runner.run
    try:
        for _ in range(30):
            response = run(wire.send_batch("Scan", [b"x"] * 100, tags="A"))
            assert response.code == ResponseCode.SUCCESS, response.remark
        # A tag nobody sent, and maxMsgNums = Java's Integer.MAX_VALUE: one request used to
        # scan all 3,000 entries on the event loop (and again on every held pull's wake-up).
        response = run(wire.pull("Scan", 0, 0, subscription="Nobody", max_nums=2**31 - 1))
        assert response.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        assert pulled(response).nextBeginOffset == 800
        response = run(wire.pull("Scan", 0, 900, subscription="Nobody", max_nums=2**31 - 1))
        assert pulled(response).nextBeginOffset == 1000  # not past its consume-queue file
    finally:
        run(wire.close())


def test_a_send_refused_at_append_leaves_no_queue(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    # Admitted (under maxMessageSize) but larger than a whole commit-log segment.
    cluster = loopback_cluster(mapped_file_size_commit_log=64 * 1024)
    wire = Wire(cluster.broker_addr)
    try:
        response = cluster.runner.run(wire.send("Fresh", b"x" * 100_000))
        assert response.code == ResponseCode.MESSAGE_ILLEGAL and "segment" in (
            response.remark or ""
        )
        assert "Fresh" not in cluster.broker.store.topics()
    finally:
        cluster.runner.run(wire.close())
