"""The name server over the wire: registration and its lease, route queries in both JSON dialects,
cluster and topic lists, data versions, and the three ways a broker leaves (unregister, closed
connection, expiry); then two real brokers with different names serving one topic, and a master
and a slave of one name."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.wire import Wire, eventually, records, sent
from conftest import broker_config
from longboat.broker import BrokerController
from longboat.broker.services.registration import MasterAddresses
from longboat.namesrv import NameServer
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode, fastjson
from longboat.protocol.bodies import (
    ClusterInfo,
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicRouteData,
)
from longboat.protocol.codes import (
    VERSION_4_9_8,
    VERSION_MERGED_REGISTRATION,
    VERSION_STANDARD_ROUTE_JSON,
)
from longboat.protocol.headers import (
    BrokerIdentityHeader,
    GetRouteInfoRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
)
from longboat.protocol.register_body import encode_compressed
from longboat.protocol.table_bodies import decode_topic_list
from longboat.remoting import Connection
from longboat.remoting.router import Handler, HandlerResult

CLUSTER = "TestCluster"


@pytest.fixture
async def namesrv() -> AsyncIterator[NameServer]:
    server = NameServer("127.0.0.1", 0, expiry_s=0.5, scan_interval_s=0.05)
    await server.start()
    yield server
    await server.stop()


def identity(name: str, addr: str, broker_id: int = 0) -> BrokerIdentityHeader:
    return BrokerIdentityHeader(
        brokerName=name, brokerAddr=addr, clusterName=CLUSTER, brokerId=broker_id
    )


async def register(
    w: Wire,
    name: str,
    addr: str,
    topics: dict[str, int],
    *,
    broker_id: int = 0,
    counter: int = 1,
    crc: int | None = None,
    version: int | None = None,
) -> int:
    """REGISTER_BROKER as a broker (of protocol `version`) sends it; the response code."""
    table = {t: TopicConfig(t, n, n, 6) for t, n in topics.items()}
    body = RegisterBrokerBody(table, DataVersion(1_700_000_000_000, counter)).to_json()
    header = RegisterBrokerRequestHeader(
        brokerName=name,
        brokerAddr=addr,
        clusterName=CLUSTER,
        haServerAddr=addr.replace(":1", ":2"),
        brokerId=broker_id,
        compressed=False,
        bodyCrc32=zlib.crc32(body) & 0x7FFFFFFF if crc is None else crc,
    )
    return (await w.call(RequestCode.REGISTER_BROKER, header, body, version=version)).code


async def route(w: Wire, topic: str, version: int | None = None) -> TopicRouteData | None:
    response = await w.call(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic), version=version
    )
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        assert topic in (response.remark or "")
        return None
    assert response.code == ResponseCode.SUCCESS, response.remark
    return TopicRouteData.from_json(response.body)


async def test_registration_routes_lists_and_unregistration(namesrv: NameServer) -> None:
    broker, client = Wire(namesrv.addr), Wire(namesrv.addr)
    assert await register(broker, "b1", "10.0.0.1:10911", {"Orders": 4, "Audit": 2}) == 0

    orders = await route(client, "Orders")
    assert orders is not None
    assert [(q.broker_name, q.read_queue_nums, q.perm) for q in orders.queue_datas] == [
        ("b1", 4, 6)
    ]
    assert [(b.broker_name, b.broker_addrs) for b in orders.broker_datas] == [
        ("b1", {0: "10.0.0.1:10911"})
    ]
    assert await route(client, "Unknown") is None

    # The JSON dialect follows the client's version: fastjson's bare integer keys for clients
    # older than 4.9.4, standard JSON (quoted keys) from 4.9.4 on.
    old = await client.call(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="Orders"), version=317
    )
    new = await client.call(
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        GetRouteInfoRequestHeader(topic="Orders"),
        version=VERSION_STANDARD_ROUTE_JSON,
    )
    assert b'{0:"10.0.0.1:10911"}' in old.body
    assert b'{"0":"10.0.0.1:10911"}' in new.body
    assert TopicRouteData.from_json(old.body) == TopicRouteData.from_json(new.body)

    response = await client.call(RequestCode.GET_BROKER_CLUSTER_INFO)
    info = ClusterInfo.from_json(response.body)
    assert info.cluster_addr_table == {CLUSTER: ["b1"]}
    assert info.broker_addr_table["b1"].broker_addrs == {0: "10.0.0.1:10911"}
    response = await client.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert sorted(decode_topic_list(response.body)) == ["Audit", "Orders"]

    # A re-registration with a new data version replaces the broker's topics.
    assert await register(broker, "b1", "10.0.0.1:10911", {"Orders": 8}, counter=2) == 0
    assert await route(client, "Audit") is None
    orders = await route(client, "Orders")
    assert orders is not None and orders.queue_datas[0].write_queue_nums == 8

    # QUERY_DATA_VERSION: "changed" against the last registration.
    same = DataVersion(1_700_000_000_000, 2)
    for version, changed in ((same, False), (DataVersion(1_700_000_000_000, 3), True)):
        response = await broker.call(
            RequestCode.QUERY_DATA_VERSION,
            identity("b1", "10.0.0.1:10911"),
            fastjson.dumps(version.to_dict()),  # the broker sends its DataVersion alone
        )
        assert QueryDataVersionResponseHeader.from_ext(response.ext_fields).changed is changed

    # KV config codes are harmless no-ops.
    response = await client.call(RequestCode.PUT_KV_CONFIG, {"namespace": "n", "key": "k"})
    assert response.code == ResponseCode.SUCCESS
    response = await client.call(RequestCode.GET_KV_CONFIG, {"namespace": "n", "key": "k"})
    assert response.code == ResponseCode.QUERY_NOT_FOUND

    # A damaged body is refused; the registration stays as it was.
    assert await register(broker, "b1", "10.0.0.1:10911", {"X": 1}, counter=9, crc=1) != 0
    assert await route(client, "X") is None

    # UNREGISTER_BROKER: the broker and its topics leave.
    response = await broker.call(RequestCode.UNREGISTER_BROKER, identity("b1", "10.0.0.1:10911"))
    assert response.code == ResponseCode.SUCCESS
    assert await route(client, "Orders") is None
    response = await client.call(RequestCode.GET_BROKER_CLUSTER_INFO)
    assert ClusterInfo.from_json(response.body).broker_addr_table == {}
    await broker.close()
    await client.close()


async def test_master_and_slave_share_a_name_and_a_slave_learns_its_master(
    namesrv: NameServer,
) -> None:
    master, slave, client = Wire(namesrv.addr), Wire(namesrv.addr), Wire(namesrv.addr)
    assert await register(master, "b1", "10.0.0.1:10911", {"Orders": 4}) == 0
    header = RegisterBrokerRequestHeader(
        brokerName="b1",
        brokerAddr="10.0.0.2:10911",
        clusterName=CLUSTER,
        haServerAddr="10.0.0.2:10912",
        brokerId=1,
    )
    response = await slave.call(RequestCode.REGISTER_BROKER, header, b"")
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields.get("masterAddr") == "10.0.0.1:10911"
    orders = await route(client, "Orders")
    assert orders is not None
    assert orders.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    for w in (master, slave, client):
        await w.close()


async def test_a_broker_leaves_when_its_connection_closes(namesrv: NameServer) -> None:
    broker, client = Wire(namesrv.addr), Wire(namesrv.addr)
    assert await register(broker, "b1", "10.0.0.1:10911", {"Orders": 4}) == 0
    await broker.close()
    await eventually(lambda: namesrv.routes.route("Orders") is None, "the route to go")
    assert await route(client, "Orders") is None
    await client.close()


async def test_a_broker_that_stops_registering_expires(namesrv: NameServer) -> None:
    """Expiry shortened to 0.5 s (120 s by default); the connection stays open, so only the
    lease can remove the broker.  Re-registering keeps the lease alive."""
    broker, client = Wire(namesrv.addr), Wire(namesrv.addr)
    assert await register(broker, "b1", "10.0.0.1:10911", {"Orders": 4}) == 0
    assert await register(broker, "b2", "10.0.0.2:10911", {"Orders": 4}) == 0

    async def b2_alone() -> bool:
        await register(broker, "b2", "10.0.0.2:10911", {"Orders": 4})
        orders = await route(client, "Orders")
        return orders is not None and [q.broker_name for q in orders.queue_datas] == ["b2"]

    await eventually(b2_alone, "b1 to expire while b2 renews its lease", timeout=10, poll=0.1)
    await broker.close()
    await client.close()


# ---------------------------------------------------------------------- two real brokers


async def test_two_brokers_serve_one_topic_and_the_route_lists_both(
    namesrv: NameServer, tmp_path: Path
) -> None:
    brokers = [
        BrokerController(
            broker_config(
                tmp_path / name, namesrv.addr, broker_name=name, default_topic_queue_nums=4
            )
        )
        for name in ("broker-a", "broker-b")
    ]
    for b in brokers:
        await b.start()
    try:
        wires = [Wire(b.broker_addr) for b in brokers]
        for i, w in enumerate(wires):
            sent(await w.send("Shared", f"on broker {i}".encode(), queue_id=i))
        await eventually(
            lambda: len((namesrv.routes.route("Shared") or TopicRouteData()).queue_datas) == 2,
            "both brokers in the route",
        )
        client = Wire(namesrv.addr)
        shared = await route(client, "Shared")
        assert shared is not None
        assert [(q.broker_name, q.write_queue_nums) for q in shared.queue_datas] == [
            ("broker-a", 4),
            ("broker-b", 4),
        ]
        assert {b.broker_name: b.broker_addrs[0] for b in shared.broker_datas} == {
            "broker-a": brokers[0].broker_addr,
            "broker-b": brokers[1].broker_addr,
        }
        # Each broker serves its own queues of the topic.
        for i, w in enumerate(wires):
            response = await w.pull("Shared", i, 0)
            assert [m.body for m in records(response)] == [f"on broker {i}".encode()]

        # A broker that stops unregisters: the route keeps only the other.
        await brokers[0].stop()
        shared = await route(client, "Shared")
        assert shared is not None
        assert [q.broker_name for q in shared.queue_datas] == ["broker-b"]
        for w in (*wires, client):
            await w.close()
    finally:
        for b in brokers:
            await b.stop()


async def test_a_running_broker_keeps_its_lease_by_registering_periodically(
    namesrv: NameServer, tmp_path: Path
) -> None:
    """Name-server expiry 0.5 s, broker registration every 100 ms: the routes stay through
    several expiry scans; once the broker stops (unregistering), they go."""
    broker = BrokerController(
        broker_config(tmp_path / "b", namesrv.addr, register_name_server_period=100)
    )
    await broker.start()
    try:
        sent(await (w := Wire(broker.broker_addr)).send("Leased", b"x"))
        await w.close()
        start = broker.registrar.registrations
        await eventually(
            lambda: broker.registrar.registrations >= start + 10, "ten more registrations"
        )
        assert namesrv.routes.route("Leased") is not None  # 1 s of 0.5 s leases, still routed
    finally:
        await broker.stop()
    assert namesrv.routes.route("Leased") is None


async def test_a_slave_learns_its_master_from_its_registration_and_outlives_it(
    namesrv: NameServer, tmp_path: Path
) -> None:
    """A master and a slave of one broker name (RocketMQ's RegisterBrokerResult): the slave's
    registrar follows the master the name server names — gone when it stops, back when it
    restarts on another port — and the route lists the slave throughout."""
    options = {"broker_name": "group-a", "register_name_server_period": 100}

    def master() -> BrokerController:
        return BrokerController(broker_config(tmp_path / "master", namesrv.addr, **options))

    first = master()
    await first.start()
    slave = BrokerController(
        broker_config(tmp_path / "slave", namesrv.addr, broker_id=1, broker_role="SLAVE", **options)
    )
    await slave.start()
    heard: list[MasterAddresses] = []
    slave.registrar.add_master_listener(heard.append)
    second: BrokerController | None = None
    try:
        learned = MasterAddresses(first.broker_addr, first.registrar.identity.ha_addr)
        assert slave.registrar.master == learned
        await first.stop()
        await eventually(lambda: slave.registrar.master == MasterAddresses(), "the master gone")
        client = Wire(namesrv.addr)
        response = await client.call(RequestCode.GET_BROKER_CLUSTER_INFO)
        groups = ClusterInfo.from_json(response.body).broker_addr_table
        assert groups["group-a"].broker_addrs == {1: slave.broker_addr}
        await client.close()
        second = master()
        await second.start()
        relearned = MasterAddresses(second.broker_addr, second.registrar.identity.ha_addr)
        await eventually(lambda: slave.registrar.master == relearned, "the master back")
        assert heard == [MasterAddresses(), relearned]
    finally:
        for b in (slave, first, second):
            if b is not None:
                await b.stop()


async def test_a_compressed_registration_of_many_topics_is_routed() -> None:
    """RocketMQ's compressedRegister form (header compressed=true) of 5,000 topics.  A name
    server of its own that expires no broker meanwhile: on a loaded host the 0.5 s of the
    module's fixture can pass between the registration and the route query."""
    namesrv = NameServer("127.0.0.1", 0)
    await namesrv.start()
    table = {f"Z{i}": TopicConfig(f"Z{i}", 4, 4, 6) for i in range(5_000)}
    body = encode_compressed(RegisterBrokerBody(table, DataVersion(1, 1)))
    header = RegisterBrokerRequestHeader(
        brokerName="zipped",
        brokerAddr="127.0.0.1:10911",
        clusterName=CLUSTER,
        haServerAddr="127.0.0.1:10912",
        brokerId=0,
        compressed=True,
        bodyCrc32=zlib.crc32(body) & 0x7FFFFFFF,
    )
    w = Wire(namesrv.addr)
    try:
        assert (await w.call(RequestCode.REGISTER_BROKER, header, body)).code == 0
        found = await route(w, "Z4999")
        assert found is not None and found.queue_datas[0].write_queue_nums == 4
        broken = (await w.call(RequestCode.REGISTER_BROKER, header, body[:-9])).code
        assert broken == ResponseCode.SYSTEM_ERROR  # crc32 no longer matches
    finally:
        await w.close()
        await namesrv.stop()


async def test_a_created_topic_is_registered_alone_and_merged(
    namesrv: NameServer, tmp_path: Path
) -> None:
    """After the broker's first (whole) registration, a topic created by a send is sent as
    an increment carrying that topic only; the name server routes it beside the others."""
    bodies: list[tuple[bool, set[str]]] = []

    def record(conn: Connection, cmd: RemotingCommand, handler: Handler) -> HandlerResult:
        header = RegisterBrokerRequestHeader.from_ext(cmd.ext_fields)
        table = RegisterBrokerBody.from_json(cmd.body).topic_config_table
        bodies.append((bool(header.incremental), set(table)))
        return handler(conn, cmd)

    namesrv.router.use(record, codes=[RequestCode.REGISTER_BROKER])
    broker = BrokerController(broker_config(tmp_path / "b", namesrv.addr))
    await broker.start()
    try:
        assert bodies and not bodies[0][0] and "First" not in bodies[0][1]
        w = Wire(broker.broker_addr)
        sent(await w.send("First", b"x"))
        sent(await w.send("Second", b"x"))
        await w.close()
        await eventually(lambda: namesrv.routes.route("Second") is not None, "Second routed")
        increments = [topics for incremental, topics in bodies if incremental]
        assert {"First"} in increments and {"Second"} in increments
        assert namesrv.routes.route("First") is not None
        assert namesrv.routes.route(bodies[0][1].pop()) is not None  # from the whole table
    finally:
        await broker.stop()


async def test_a_rocketmq5_brokers_registrations_are_merged_a_4x_table_replaces(
    namesrv: NameServer,
) -> None:
    """RocketMQ 5 brokers register a created topic alone, with no mark of an increment, and
    their name server merges every registration: a 5.x broker's other topics stay routed.
    A 4.x broker always sends its whole table, so a topic missing from it has been deleted."""
    w = Wire(namesrv.addr)
    try:
        for name, version in (("five", VERSION_MERGED_REGISTRATION), ("four", VERSION_4_9_8)):
            addr = "127.0.0.1:10911" if name == "five" else "127.0.0.1:20911"
            old, new = f"{name}_Old", f"{name}_New"
            assert await register(w, name, addr, {old: 4}, version=version) == 0
            assert await register(w, name, addr, {new: 4}, counter=2, version=version) == 0
            assert await route(w, new) is not None
            assert (await route(w, old) is not None) is (name == "five")
    finally:
        await w.close()
