"""The name server's route table driven by hand (the table in `routes.py`), with a fake clock:
no sockets, no sleeps.  The same table runs end to end over real sockets in
`test_namesrv_wire.py`.

Each test feeds registrations, unregistrations, closed connections and clock moves, and after
every step compares the whole table (as clients see it: cluster info, topic names, routes,
live addresses) with the expected one, and checks the invariants `routes.py` states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from broker.fakes import FakeClock
from longboat.namesrv.routes import BROKER_EXPIRY_S, Registered, RouteTable
from longboat.protocol.bodies import DataVersion, TopicConfig
from longboat.protocol.types import PERM_READ, PERM_READ_WRITE

CLUSTER = "C"
A0, A1, B0 = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"


def version(n: int) -> DataVersion:
    return DataVersion(timestamp=n, counter=n)


def topics(*names: str) -> dict[str, TopicConfig]:
    return {n: TopicConfig(n, 4, 4, PERM_READ_WRITE) for n in names}


@dataclass
class Routes:
    """A route table under a fake clock, with the registrations the tests repeat."""

    clock: FakeClock = field(default_factory=FakeClock)
    table: RouteTable = field(init=False)

    def __post_init__(self) -> None:
        self.table = RouteTable(clock=self.clock)

    def register(
        self,
        name: str,
        addr: str,
        broker_id: int = 0,
        configs: dict[str, TopicConfig] | None = None,
        v: int = 1,
        channel: object = None,
    ) -> Registered:
        return self.table.register(
            CLUSTER,
            name,
            addr,
            broker_id,
            addr.replace("10911", "10912"),
            configs if configs is not None else topics("T"),
            version(v),
            channel,
        )

    def state(self) -> dict[str, object]:
        """The whole table as clients see it, after checking its invariants."""
        check_invariants(self.table)
        info = self.table.cluster_info()
        return {
            "brokers": {n: dict(d.broker_addrs) for n, d in info.broker_addr_table.items()},
            "topics": {
                t: [q.broker_name for q in route.queue_datas]
                for t in self.table.topic_names()
                if (route := self.table.route(t)) is not None
            },
        }


def check_invariants(table: RouteTable) -> None:
    info = table.cluster_info()
    addrs = [a for d in info.broker_addr_table.values() for a in d.broker_addrs.values()]
    # Every address of a broker holds a lease and every lease belongs to a broker's address.
    assert sorted(addrs) == table.broker_addrs()
    # A broker name is listed iff it has an address, and its cluster lists it.
    for name, data in info.broker_addr_table.items():
        assert data.broker_addrs and name in info.cluster_addr_table[data.cluster]
    for cluster, names in info.cluster_addr_table.items():
        assert names and all(info.broker_addr_table[n].cluster == cluster for n in names)
    # A topic is listed iff some known broker serves it.
    for topic in table.topic_names():
        route = table.route(topic)
        assert route is not None and route.queue_datas
        assert {b.broker_name for b in route.broker_datas} <= set(info.broker_addr_table)


EMPTY: dict[str, object] = {"brokers": {}, "topics": {}}
ONE_MASTER = {"brokers": {"a": {0: A0}}, "topics": {"T": ["a"], "U": ["a"]}}


# ---------------------------------------------------------------------- a broker leaves


def unregister(r: Routes) -> None:
    assert r.table.unregister("a", A0, 0)


def close_connection(r: Routes) -> None:
    assert r.table.remove_channel("conn-a") == [A0]


def expire(r: Routes) -> None:
    r.clock.now += BROKER_EXPIRY_S + 0.001
    assert r.table.expire() == [A0]


@pytest.mark.parametrize("leave", [unregister, close_connection, expire])
def test_a_broker_leaves_with_its_queue_data(leave: Callable[[Routes], None]) -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T", "U"), channel="conn-a")
    assert r.state() == ONE_MASTER
    leave(r)
    assert r.state() == EMPTY
    assert r.table.route("T") is None and r.table.data_version(A0) is None


def test_unregistering_someone_else_changes_nothing() -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T", "U"))
    assert not r.table.unregister("a", A1, 0)  # another address
    assert not r.table.unregister("a", A0, 1)  # another id
    assert not r.table.unregister("b", A0, 0)  # another name
    assert r.table.remove_channel("unknown") == []
    assert r.state() == ONE_MASTER


# ---------------------------------------------------------------------- the lease


def test_the_lease_runs_120_s_from_the_last_registration_or_version_query() -> None:
    r = Routes()
    r.register("a", A0)
    steps = [
        # (seconds the clock moves, what renews the lease then, expired?)
        (BROKER_EXPIRY_S, None, False),  # exactly 120 s old: not older than the expiry
        (0.0, "register", False),
        (BROKER_EXPIRY_S - 1, "query", False),  # QUERY_DATA_VERSION renews too
        (BROKER_EXPIRY_S - 1, None, False),
        (1.001, None, True),
    ]
    for moved, renew, expired in steps:
        r.clock.now += moved
        if renew == "register":
            r.register("a", A0)
        elif renew == "query":
            assert not r.table.data_version_changed(A0, version(1))
        assert r.table.expire() == ([A0] if expired else [])
        assert r.state() == (
            EMPTY if expired else {"brokers": {"a": {0: A0}}, "topics": {"T": ["a"]}}
        )


def test_a_version_query_from_an_unknown_broker_asks_it_to_register() -> None:
    r = Routes()
    assert r.table.data_version_changed(A0, version(1))
    r.register("a", A0, v=1)
    assert r.table.data_version(A0) == version(1)
    assert not r.table.data_version_changed(A0, version(1))
    assert r.table.data_version_changed(A0, version(2))


# ---------------------------------------------------------------------- queue data


def test_queue_data_is_replaced_only_when_the_data_version_changes() -> None:
    r = Routes()
    # (topics registered, data version, topics routed afterwards)
    steps = [
        (("T", "U"), 1, {"T": ["a"], "U": ["a"]}),
        (("T",), 1, {"T": ["a"], "U": ["a"]}),  # same version: the table is not re-read
        (("T",), 2, {"T": ["a"]}),  # new version: U was deleted on the broker
        (("T", "V"), 3, {"T": ["a"], "V": ["a"]}),
        ((), 4, {}),
    ]
    for names, v, routed in steps:
        r.register("a", A0, configs=topics(*names), v=v)
        assert r.state() == {"brokers": {"a": {0: A0}}, "topics": routed}


def test_queue_data_comes_from_the_master_and_a_slave_learns_where_it_is() -> None:
    r = Routes()
    slave_first = r.register("a", A1, broker_id=1, configs=topics("S"))
    assert slave_first == Registered(None, None)  # no master yet
    assert r.state() == {"brokers": {"a": {1: A1}}, "topics": {}}
    assert r.register("a", A0, configs=topics("T")) == Registered(None, None)
    assert r.register("a", A1, broker_id=1, configs=topics("S"), v=2) == Registered(
        A0, "10.0.0.1:10912"
    )
    assert r.state() == {"brokers": {"a": {0: A0, 1: A1}}, "topics": {"T": ["a"]}}
    # The master leaves: the broker name keeps its queue data while its slave remains (the
    # slave serves reads), and loses it with the slave.
    assert r.table.unregister("a", A0, 0)
    assert r.state() == {"brokers": {"a": {1: A1}}, "topics": {"T": ["a"]}}
    assert r.table.unregister("a", A1, 1)
    assert r.state() == EMPTY


def master_unregisters(r: Routes) -> None:
    assert r.table.unregister("a", A0, 0)


def master_connection_closes(r: Routes) -> None:
    assert r.table.remove_channel("conn-a0") == [A0]


def master_expires(r: Routes) -> None:
    """The master falls silent (killed) while its slave keeps registering."""
    r.clock.now += BROKER_EXPIRY_S / 2
    r.register("a", A1, broker_id=1)
    r.clock.now += BROKER_EXPIRY_S / 2 + 0.001
    assert r.table.expire() == [A0]


@pytest.mark.parametrize("leave", [master_unregisters, master_connection_closes, master_expires])
def test_a_slave_outlives_its_master_and_learns_when_it_returns(
    leave: Callable[[Routes], None],
) -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T", "U"), channel="conn-a0")
    assert r.register("a", A1, broker_id=1) == Registered(A0, "10.0.0.1:10912")
    leave(r)
    slave_only = {"brokers": {"a": {1: A1}}, "topics": {"T": ["a"], "U": ["a"]}}
    assert r.state() == slave_only
    route = r.table.route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {1: A1}
    # The slave's next registration says it has no master; its routes are unchanged.
    assert r.register("a", A1, broker_id=1, v=2) == Registered(None, None)
    assert r.state() == slave_only
    # The master comes back (its data version as before: a restart with the same topics).
    assert r.register("a", A0, configs=topics("T", "U")) == Registered(None, None)
    assert r.register("a", A1, broker_id=1, v=3) == Registered(A0, "10.0.0.1:10912")
    assert r.state() == {"brokers": {"a": {0: A0, 1: A1}}, "topics": {"T": ["a"], "U": ["a"]}}


def test_two_brokers_serve_a_topic_until_the_last_one_leaves() -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T", "U"))
    r.table.register(CLUSTER, "b", B0, 0, "", topics("T"), version(1))
    assert r.state() == {
        "brokers": {"a": {0: A0}, "b": {0: B0}},
        "topics": {"T": ["a", "b"], "U": ["a"]},
    }
    route = r.table.route("T")
    assert route is not None and [q.perm for q in route.queue_datas] == [PERM_READ_WRITE] * 2
    assert r.table.unregister("a", A0, 0)
    assert r.state() == {"brokers": {"b": {0: B0}}, "topics": {"T": ["b"]}}
    assert r.table.unregister("b", B0, 0)
    assert r.state() == EMPTY


def test_a_route_is_a_copy_the_caller_may_change() -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T", "U"))  # the same queue data: held once
    route = r.table.route("T")
    assert route is not None
    route.queue_datas[0].perm = PERM_READ
    route.broker_datas[0].broker_addrs[7] = "elsewhere"
    for topic in ("T", "U"):
        again = r.table.route(topic)
        assert again is not None and again.queue_datas[0].perm == PERM_READ_WRITE
        assert again.broker_datas[0].broker_addrs == {0: A0}


# ---------------------------------------------------------------------- restarts


def test_a_broker_restarted_on_another_port_or_id_replaces_its_old_entry() -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T"))
    moved = A0.replace("10911", "20911")
    steps = [
        # (address, id, the broker's addresses afterwards)
        (moved, 0, {0: moved}),  # same id, another port: the old address is forgotten
        (moved, 1, {1: moved}),  # same address, another id
        (A0, 0, {0: A0, 1: moved}),  # a second address under another id
    ]
    for addr, bid, addrs in steps:
        r.register("a", addr, broker_id=bid, configs=topics("T"), v=len(addrs))
        assert r.state()["brokers"] == {"a": addrs}
    assert r.table.broker_addrs() == sorted([A0, moved])


def test_delete_topic_removes_it_from_the_routes_until_the_broker_registers_it_again() -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T", "U"))
    assert r.table.delete_topic("U") and not r.table.delete_topic("U")
    assert r.state() == {"brokers": {"a": {0: A0}}, "topics": {"T": ["a"]}}
    r.register("a", A0, configs=topics("T", "U"), v=2)
    assert r.state() == ONE_MASTER


def test_an_incremental_registration_merges_and_a_whole_table_replaces() -> None:
    r = Routes()
    r.register("a", A0, configs=topics("T", "U"), v=1)
    r.table.register(CLUSTER, "a", A0, 0, "", topics("New"), version(2), incremental=True)
    assert r.state()["topics"] == {"T": ["a"], "U": ["a"], "New": ["a"]}
    r.register("a", A0, configs=topics("T", "New"), v=3)  # U deleted on the broker
    assert r.state()["topics"] == {"T": ["a"], "New": ["a"]}
