"""The broker core over the wire: send and pull with the fields clients read, consumer offsets
and their rules, consumer groups and their notifications, queue positions, bad input, and a
restart that keeps everything acknowledged.  Real name server + broker on loopback, bare
protocol client (see wire.py)."""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict

from conftest import Cluster
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode, encode_frame
from longboat.protocol.bodies import TopicRouteData
from longboat.protocol.headers import (
    ConsumerGroupHeader,
    EarliestMsgStoreTimeResponseHeader,
    GetRouteInfoRequestHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeader,
    UnregisterClientRequestHeader,
)
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.table_bodies import decode_consumer_id_list
from longboat.remoting import Connection, Router
from longboat.store import FlushDiskType

from .wire import Wire, eventually, offset_of, pull_header, pulled, records, send_header, sent

TOPIC = "CoreTopic"


async def route(namesrv_addr: str, topic: str) -> TopicRouteData | None:
    w = Wire(namesrv_addr)
    try:
        response = await w.call(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
        )
    finally:
        await w.close()
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    assert response.code == ResponseCode.SUCCESS, response.remark
    return TopicRouteData.from_json(response.body)


# ---------------------------------------------------------------------- send and pull


async def test_sent_messages_pull_back_intact_with_the_fields_clients_read(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    props = {Prop.KEYS: "k1 k2", Prop.UNIQ_KEY: "UNIQ-1", "custom": "value=with;odd:chars"}
    first = await w.send(TOPIC, b"\x00binary\xffbody", tags="TagA", queue_id=1, props=props)
    header = sent(first)
    assert (header.queueId, header.queueOffset) == (1, 0)
    assert (header.MSG_REGION, header.TRACE_ON) == ("DefaultRegion", "true")
    host, port, commit_log_offset = decode_offset_msg_id(header.msgId)
    assert f"{host}:{port}" == cluster.broker_addr

    batch = await w.send_batch(TOPIC, [b"b0", b"b1", b"b2"], queue_id=1, tags="TagB")
    batch_header = sent(batch)
    assert batch_header.queueOffset == 1
    assert len(batch_header.msgId.split(",")) == 3

    response = await w.pull(TOPIC, 1, 0)
    assert response.code == ResponseCode.SUCCESS
    got = records(response)
    assert [(m.body, m.tags, m.queue_offset) for m in got] == [
        (b"\x00binary\xffbody", "TagA", 0),
        (b"b0", "TagB", 1),
        (b"b1", "TagB", 2),
        (b"b2", "TagB", 3),
    ]
    assert got[0].properties["custom"] == "value=with;odd:chars"
    assert got[0].key_list == ["k1", "k2"]
    assert got[0].uniq_key == "UNIQ-1"
    assert got[0].commit_log_offset == commit_log_offset
    assert got[0].offset_msg_id == header.msgId
    assert got[0].store_host_str == cluster.broker_addr
    assert got[0].properties[Prop.CLUSTER] == cluster.config.broker_cluster_name
    offsets = pulled(response)
    assert (offsets.nextBeginOffset, offsets.minOffset, offsets.maxOffset) == (4, 0, 4)

    # Tag filtering by hash, and max messages per answer.
    response = await w.pull(TOPIC, 1, 0, subscription="TagB", max_nums=2)
    assert [m.body for m in records(response)] == [b"b0", b"b1"]
    assert pulled(response).nextBeginOffset == 3
    await w.close()


async def test_auto_created_topic_is_routed_at_once_and_refused_when_auto_creation_is_off(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    sent(await w.send("Fresh", b"x"))
    # The registration after a creation is sent at once, not at the next 30 s round.
    await eventually(
        lambda: cluster.namesrv.routes.route("Fresh") is not None, "the route of a new topic"
    )
    fresh = await route(cluster.namesrv_addr, "Fresh")
    assert fresh is not None
    assert [q.write_queue_nums for q in fresh.queue_datas] == [8]
    await w.close()

    closed = loopback_cluster(auto_create_topic=False)
    w = Wire(closed.broker_addr)
    response = await w.send("Fresh", b"x")
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    assert response.ext_fields.get("MSG_REGION") == "DefaultRegion"
    response = await w.pull("Fresh", 0, 0)
    assert response.code == ResponseCode.TOPIC_NOT_EXIST
    await w.close()


async def test_pull_answers_follow_rocketmq_for_every_position(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    for i in range(3):
        sent(await w.send(TOPIC, f"m{i}".encode(), tags="TagA"))
    cases = {
        # offset: (code, nextBeginOffset)
        3: (ResponseCode.PULL_NOT_FOUND, 3),  # the tail: nothing new yet
        10: (ResponseCode.PULL_OFFSET_MOVED, 0),  # past the tail: to the min (0), as RocketMQ
    }
    for offset, (code, next_begin) in cases.items():
        response = await w.pull(TOPIC, 0, offset)
        assert (response.code, pulled(response).nextBeginOffset) == (code, next_begin), offset
    # An empty queue at offset 0 is "not found"; further on it is "moved" to 0.
    response = await w.pull(TOPIC, 5, 0)
    assert (response.code, pulled(response).nextBeginOffset) == (ResponseCode.PULL_NOT_FOUND, 0)
    response = await w.pull(TOPIC, 5, 7)
    assert (response.code, pulled(response).nextBeginOffset) == (
        ResponseCode.PULL_OFFSET_MOVED,
        0,
    )
    # Nothing matches the filter in the scanned range: retry at once from past it.
    response = await w.pull(TOPIC, 0, 0, subscription="TagZ")
    assert response.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert pulled(response).nextBeginOffset == 3
    # A queue id the topic does not have.
    response = await w.pull(TOPIC, 99, 0)
    assert response.code == ResponseCode.SYSTEM_ERROR
    await w.close()


async def test_v1_sends_byte_limits_per_pull_and_permissions(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(max_transfer_bytes_on_message_in_memory=1024)
    w = Wire(cluster.broker_addr)
    # SEND_MESSAGE (10) carries the long header names that SEND_MESSAGE_V2 shortens.
    v1 = SendMessageRequestHeader(**asdict(send_header(TOPIC, 0, {Prop.TAGS: "TagA"})))
    for i in range(10):
        response = await w.call(RequestCode.SEND_MESSAGE, v1, b"x" * 300)
        assert sent(response).queueOffset == i
    # About 1 KiB per answer: the byte limit cuts the batch of 32 asked for.
    response = await w.pull(TOPIC, 0, 0, max_nums=32)
    got = records(response)
    assert 1 <= len(got) <= 3
    assert pulled(response).nextBeginOffset == len(got)

    # A transaction half is stored where consumers do not see it (test_transactions_wire),
    # unless the broker rejects transactional messages.
    prepared = send_header(TOPIC, 0, {})
    half = {**prepared.to_ext(), "f": str(MessageSysFlag.TRANSACTION_PREPARED_TYPE)}
    response = await w.call(RequestCode.SEND_MESSAGE_V2, half, b"half")
    assert response.code == ResponseCode.SUCCESS
    assert pulled(await w.pull(TOPIC, 0, 0)).maxOffset == 10
    await w.close()
    rejecting = Wire(loopback_cluster(reject_transaction_message=True).broker_addr)
    response = await rejecting.call(RequestCode.SEND_MESSAGE_V2, half, b"half")
    assert response.code == ResponseCode.NO_PERMISSION
    assert "rejectTransactionMessage" in (response.remark or "")
    await rejecting.close()

    # A read-only broker (brokerPermission=4) refuses sends.
    read_only = loopback_cluster(broker_permission=4)
    w = Wire(read_only.broker_addr)
    response = await w.send(TOPIC, b"x")
    assert response.code == ResponseCode.NO_PERMISSION
    assert "forbidden" in (response.remark or "")
    await w.close()


async def test_sync_flush_sends_are_answered_after_the_fsync(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    w = Wire(cluster.broker_addr)
    answers = await asyncio.gather(*(w.send(TOPIC, f"s{i}".encode()) for i in range(20)))
    assert sorted(sent(a).queueOffset for a in answers) == list(range(20))
    assert cluster.broker.store.flushed_physical_offset >= cluster.broker.store.max_physical_offset
    await w.close()


# ---------------------------------------------------------------------- offsets


async def test_consumer_offset_rules(loopback_cluster: Callable[..., Cluster]) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    for i in range(5):
        sent(await w.send(TOPIC, f"m{i}".encode()))

    # No stored offset: 0 while the queue's first message is stored (4.x), unless the client
    # asks for QUERY_NOT_FOUND with setZeroIfNotFound=false (5.x clients).
    assert offset_of(await w.query_offset("g1", TOPIC, 0)) == 0
    response = await w.query_offset("g1", TOPIC, 0, set_zero=False)
    assert response.code == ResponseCode.QUERY_NOT_FOUND
    assert response.remark

    await w.commit("g1", TOPIC, 0, 3)
    assert offset_of(await w.query_offset("g1", TOPIC, 0)) == 3
    assert offset_of(await w.query_offset("g1", TOPIC, 0, set_zero=False)) == 3
    # ali-ons commits -1 for queues it never consumed: it must not overwrite anything.
    await w.commit("g1", TOPIC, 0, -1)
    assert offset_of(await w.query_offset("g1", TOPIC, 0)) == 3
    # Another group is independent.
    assert offset_of(await w.query_offset("g2", TOPIC, 0)) == 0

    # A pull with the commit flag commits before reading.
    response = await w.pull(TOPIC, 0, 4, group="g1", commit_offset=4)
    assert [m.body for m in records(response)] == [b"m4"]
    assert offset_of(await w.query_offset("g1", TOPIC, 0)) == 4
    await w.close()


async def test_after_retention_a_new_group_is_not_told_zero_and_old_offsets_move(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """Retention deleted the queue's first messages: a group with no offset gets
    QUERY_NOT_FOUND (not 0, which would point at nothing) and a pull below the minimum is
    moved to it."""
    cluster = loopback_cluster(mapped_file_size_commit_log=4096)
    w = Wire(cluster.broker_addr)
    for i in range(60):
        sent(await w.send(TOPIC, f"{i:0200d}".encode()))
    store = cluster.broker.store

    async def expire() -> int:  # on the broker's loop, as its retention job runs
        store.flush()
        later = int((time.time() + 1000 * 3600) * 1000)  # past fileReservedTime (72 h)
        return store.delete_expired(now_ms=later, force=True)

    assert cluster.runner.run(expire()) > 0
    first = offset_of(
        await w.call(RequestCode.GET_MIN_OFFSET, QueueRequestHeader(topic=TOPIC, queueId=0))
    )
    assert 0 < first < 60
    response = await w.query_offset("new-group", TOPIC, 0)
    assert response.code == ResponseCode.QUERY_NOT_FOUND
    response = await w.pull(TOPIC, 0, 0)
    assert response.code == ResponseCode.PULL_OFFSET_MOVED
    assert pulled(response).nextBeginOffset == first
    response = await w.pull(TOPIC, 0, first)
    assert records(response)[0].body == f"{first:0200d}".encode()
    await w.close()


async def test_queue_positions_max_min_search_and_earliest_time(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    for i in range(6):
        sent(await w.send(TOPIC, f"m{i}".encode(), queue_id=2))
        await asyncio.sleep(0.002)  # distinct store times for the search
    queue = QueueRequestHeader(topic=TOPIC, queueId=2)
    assert offset_of(await w.call(RequestCode.GET_MAX_OFFSET, queue)) == 6
    assert offset_of(await w.call(RequestCode.GET_MIN_OFFSET, queue)) == 0
    empty = QueueRequestHeader(topic=TOPIC, queueId=3)
    assert offset_of(await w.call(RequestCode.GET_MAX_OFFSET, empty)) == 0

    stored = [m.store_timestamp for m in records(await w.pull(TOPIC, 2, 0))]
    assert len(stored) == 6

    async def search(ts: int) -> int:
        header = SearchOffsetRequestHeader(topic=TOPIC, queueId=2, timestamp=ts)
        return offset_of(await w.call(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header))

    for k, ts in enumerate(stored):
        # The first offset stored at or after the time.
        assert await search(ts) == min(i for i, t in enumerate(stored) if t >= ts), k
    assert await search(0) == 0
    assert await search(stored[-1] + 60_000) == 6

    response = await w.call(RequestCode.GET_EARLIEST_MSG_STORETIME, queue)
    assert EarliestMsgStoreTimeResponseHeader.from_ext(response.ext_fields).timestamp == stored[0]
    await w.close()


# ---------------------------------------------------------------------- consumer groups


class Notified:
    """A client-side router that records NOTIFY_CONSUMER_IDS_CHANGED requests."""

    def __init__(self) -> None:
        self.router = Router("test client")
        self.groups: list[str] = []
        self.router.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._notified)

    def _notified(self, conn: Connection, cmd: RemotingCommand) -> None:
        self.groups.append(ConsumerGroupHeader.from_ext(cmd.ext_fields).consumerGroup)


async def consumer_ids(w: Wire, group: str) -> list[str]:
    response = await w.call(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, ConsumerGroupHeader(consumerGroup=group)
    )
    if response.code != ResponseCode.SUCCESS:
        return []
    return decode_consumer_id_list(response.body)


async def test_heartbeats_make_a_group_and_members_hear_every_change(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    sent(await (producer := Wire(cluster.broker_addr)).send(TOPIC, b"x", tags="TagA"))
    first, second = Notified(), Notified()
    a = Wire(cluster.broker_addr, first.router)
    b = Wire(cluster.broker_addr, second.router)

    # Every change of the member list is told to every member, the newcomer included.
    await a.heartbeat("client-a", "grp", TOPIC, "TagA")
    await eventually(lambda: first.groups == ["grp"], "a's notification of its own joining")
    assert await consumer_ids(a, "grp") == ["client-a"]
    # The group's retry topic exists and is routed at once (clients subscribe to it next).
    await eventually(
        lambda: cluster.namesrv.routes.route("%RETRY%grp") is not None, "the retry topic route"
    )

    await b.heartbeat("client-b", "grp", TOPIC, "TagA")
    await eventually(lambda: len(first.groups) == 2, "a's notification of b joining")
    await eventually(lambda: second.groups == ["grp"], "b's notification of its joining")
    assert await consumer_ids(b, "grp") == ["client-a", "client-b"]
    # A repeated heartbeat changes nothing: nobody is told to rebalance.
    await b.heartbeat("client-b", "grp", TOPIC, "TagA")
    await consumer_ids(a, "grp")  # a notification would be on a's socket before this answer
    assert len(first.groups) == 2

    # A pull without the subscription flag uses the group's subscription from the heartbeat.
    response = await a.pull(TOPIC, 0, 0, group="grp", subscription=None)
    assert [m.body for m in records(response)] == [b"x"]
    response = await a.pull(TOPIC, 0, 0, group="grp", subscription=None, sub_version=2)
    assert response.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
    response = await a.pull(TOPIC, 0, 0, group="nobody", subscription=None)
    assert response.code == ResponseCode.SUBSCRIPTION_NOT_EXIST

    # UNREGISTER_CLIENT tells the others.
    await b.call(
        RequestCode.UNREGISTER_CLIENT,
        UnregisterClientRequestHeader(clientID="client-b", consumerGroup="grp"),
    )
    await eventually(lambda: len(first.groups) == 3, "a's notification of b leaving")
    assert await consumer_ids(a, "grp") == ["client-a"]

    # A closed connection too.
    await b.heartbeat("client-b", "grp", TOPIC, "TagA")
    await eventually(lambda: len(first.groups) == 4, "a's notification of b rejoining")
    await b.close()
    await eventually(lambda: len(first.groups) == 5, "a's notification of b's connection closing")
    assert set(first.groups) == {"grp"}
    assert await consumer_ids(a, "grp") == ["client-a"]
    for w in (a, producer):
        await w.close()


async def test_a_silent_member_is_closed_and_the_others_are_told(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """channelExpiredTimeout shortened to 0.3 s (120 s by default)."""
    cluster = loopback_cluster(channel_expired_timeout=300)
    sent(await (producer := Wire(cluster.broker_addr)).send(TOPIC, b"x"))
    live_side = Notified()
    silent, live = Wire(cluster.broker_addr), Wire(cluster.broker_addr, live_side.router)
    await silent.heartbeat("client-silent", "grp", TOPIC)
    silent_conn = await silent.client.connection(cluster.broker_addr)
    await live.heartbeat("client-live", "grp", TOPIC)
    assert await consumer_ids(live, "grp") == ["client-live", "client-silent"]
    told = len(live_side.groups)

    async def silent_one_dropped() -> bool:
        await live.heartbeat("client-live", "grp", TOPIC)  # the live one keeps its lease
        return await consumer_ids(live, "grp") == ["client-live"]

    await eventually(silent_one_dropped, "the silent member to be closed", timeout=10, poll=0.05)
    assert len(live_side.groups) > told
    # By closing the silent connection (the client sees the close).
    await eventually(lambda: silent_conn.closed, "the silent connection to close")
    for w in (silent, live, producer):
        await w.close()


# ---------------------------------------------------------------------- bad input


async def test_bad_input_is_refused_and_the_broker_keeps_serving_others(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(max_message_size=1024)
    good = Wire(cluster.broker_addr)
    sent(await good.send(TOPIC, b"before"))
    host, port = cluster.broker_addr.split(":")

    # Malformed frames close only their own connection.
    for garbage in (
        b"\x00\x00\x00\x08\x00\xff\xff\xffjunk",  # header longer than the frame
        b"\x00\x00\x00\x0c\x00\x00\x00\x04{{{{jun",  # header that is not JSON
        b"\x7f\xff\xff\xff",  # a 2 GiB frame
    ):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(garbage + b"k" * 8)
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 5) == b"", garbage
        writer.close()

    # Unknown codes, missing header fields: answered, connection kept.
    response = await good.call(9999)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    response = await good.call(RequestCode.PULL_MESSAGE, {"topic": TOPIC})
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark

    # Over-size messages and bad or reserved topic names are refused, nothing stored.
    response = await good.send(TOPIC, b"x" * 2048)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    for bad in ("bad topic", "a" * 128, "tab\there", "ünïcode"):
        response = await good.send(bad, b"x")
        assert response.code == ResponseCode.INVALID_PARAMETER, bad
        assert cluster.broker.topics.get(bad) is None
    for reserved in ("SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC"):
        response = await good.send(reserved, b"x")
        assert response.code == ResponseCode.INVALID_PARAMETER, reserved
    response = await good.call(RequestCode.HEART_BEAT, body=b"{not json")
    assert response.code == ResponseCode.SYSTEM_ERROR

    # Through all of it, the good connection kept working and nothing bad was stored.
    sent(await good.send(TOPIC, b"after"))
    response = await good.pull(TOPIC, 0, 0)
    assert [m.body for m in records(response)] == [b"before", b"after"]
    await good.close()


async def test_a_client_that_stops_reading_is_paused_not_buffered_without_bound(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """A peer that pipelines pulls and never reads the answers: once its answers pass the
    write high-water mark the broker stops reading its requests (TCP back-pressure reaches the
    peer), so the broker's memory for it stays bounded; other clients are served meanwhile."""
    cluster = loopback_cluster()
    good = Wire(cluster.broker_addr)
    for _ in range(32):
        sent(await good.send(TOPIC, b"x" * 1024))
    host, port = cluster.broker_addr.split(":")
    _unread, writer = await asyncio.open_connection(host, int(port))
    frame = encode_frame(
        RemotingCommand.request(RequestCode.PULL_MESSAGE, pull_header(TOPIC, 0, 0).to_ext())
    )
    blocked = False
    for _ in range(5_000):  # 5,000 answers of 32 KiB would be 160 MiB
        writer.write(frame * 20)
        try:
            await asyncio.wait_for(writer.drain(), 1.0)
        except TimeoutError:
            blocked = True
            break
    assert blocked, "the broker kept reading requests whose answers nobody read"
    buffered = max(c.transport.get_write_buffer_size() for c in cluster.broker.server.connections)
    assert buffered < 16 * 1024 * 1024
    # Meanwhile the broker serves others.
    response = await good.pull(TOPIC, 0, 0, timeout=5)
    assert len(records(response)) == 32
    writer.transport.abort()
    await good.close()


# ---------------------------------------------------------------------- restart


async def test_restart_keeps_messages_offsets_and_topics(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    ids = [sent(await w.send(TOPIC, f"m{i}".encode(), queue_id=1)).msgId for i in range(5)]
    await w.commit("g", TOPIC, 1, 3)
    await w.close()

    await asyncio.to_thread(cluster.restart_broker)

    w = Wire(cluster.broker_addr)
    assert offset_of(await w.query_offset("g", TOPIC, 1)) == 3
    response = await w.pull(TOPIC, 1, 0)
    got = records(response)
    assert [m.body for m in got] == [f"m{i}".encode() for i in range(5)]
    assert [m.offset_msg_id for m in got] == ids
    assert all(zlib.crc32(m.body) & 0x7FFFFFFF == m.body_crc for m in got)
    # New sends continue the queue.
    assert sent(await w.send(TOPIC, b"m5", queue_id=1)).queueOffset == 5
    await eventually(lambda: cluster.namesrv.routes.route(TOPIC) is not None, "the route")
    await w.close()
