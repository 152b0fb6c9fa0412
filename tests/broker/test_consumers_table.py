"""The consumer-group table driven by hand (the table in `consumers.py`), with a fake clock:
which heartbeats, unregisters and closed connections count as a change members must
rebalance on, and which connections have gone silent.  The same table runs end to end over
real sockets in `test_core_wire.py`."""

from __future__ import annotations

import pytest

from longboat.broker.state.consumers import ConsumerManager
from longboat.protocol.bodies import ConsumerData, SubscriptionData
from longboat.remoting import Connection

from .fakes import FakeClock, fake_connection

JAVA = 0  # LanguageCode; the table only stores it


def conn() -> Connection:
    return fake_connection()[0]


def data(group: str, *subs: tuple[str, str, int], model: str = "CLUSTERING") -> ConsumerData:
    return ConsumerData(
        group,
        message_model=model,
        subscription_data_set=[SubscriptionData.of(t, expr, v) for t, expr, v in subs],
    )


def beat(table: ConsumerManager, c: Connection, client_id: str, d: ConsumerData) -> bool:
    return table.heartbeat(c, client_id, JAVA, 317, d)


# ---------------------------------------------------------------------- heartbeats

# Each row: the group's state before (one member, c1 on connection A, subscribed to T "*" at
# version 1), the heartbeat, and whether members must rebalance.
SUB_T = ("T", "*", 1)


@pytest.mark.parametrize(
    ("on", "client_id", "subs", "changed"),
    [
        ("A", "c1", [SUB_T], False),  # a refresh
        ("A", "c1", [("T", "TagA", 2)], False),  # newer expression, same topics
        ("A", "c1", [SUB_T, ("U", "*", 1)], True),  # a topic added
        ("A", "c1", [], True),  # every topic dropped
        ("A", "c1-restarted", [SUB_T], True),  # another client on the same connection
        ("B", "c2", [SUB_T], True),  # a new member
    ],
)
def test_what_a_heartbeat_changes(
    on: str, client_id: str, subs: list[tuple[str, str, int]], changed: bool
) -> None:
    table = ConsumerManager(clock=FakeClock())
    connections = {"A": conn(), "B": conn()}
    assert beat(table, connections["A"], "c1", data("g", SUB_T))  # the first: a change
    assert beat(table, connections[on], client_id, data("g", *subs)) is changed


def test_a_subscription_is_replaced_only_by_a_newer_version() -> None:
    table = ConsumerManager(clock=FakeClock())
    a = conn()
    beat(table, a, "c1", data("g", ("T", "TagA", 5)))
    beat(table, a, "c1", data("g", ("T", "TagB", 4)))  # older: a late heartbeat, ignored
    sub = table.subscription("g", "T")
    assert sub is not None and (sub.sub_string, sub.sub_version) == ("TagA", 5)
    beat(table, a, "c1", data("g", ("T", "TagB", 6)))
    sub = table.subscription("g", "T")
    assert sub is not None and (sub.sub_string, sub.sub_version) == ("TagB", 6)
    assert table.subscription("g", "U") is None and table.subscription("nobody", "T") is None


def test_the_latest_heartbeat_sets_the_groups_settings() -> None:
    table = ConsumerManager(clock=FakeClock())
    beat(table, conn(), "c1", data("g", SUB_T, model="BROADCASTING"))
    info = table.group("g")
    assert info is not None and info.message_model == "BROADCASTING"
    assert table.group("other") is None


# ---------------------------------------------------------------------- members


def test_member_ids_are_distinct_sorted_and_live_only() -> None:
    table = ConsumerManager(clock=FakeClock())
    a, b, c = conn(), conn(), conn()
    beat(table, a, "zeta", data("g", SUB_T))
    beat(table, b, "alpha", data("g", SUB_T))
    beat(table, c, "alpha", data("g", SUB_T))  # one client, two connections
    assert table.client_ids("g") == ["alpha", "zeta"]
    assert set(table.members("g")) == {a, b, c}
    a.close()  # closed, not yet removed: already out of what others are told
    assert table.client_ids("g") == ["alpha"]
    assert set(table.members("g")) == {b, c}
    assert table.client_ids("nobody") == [] and table.members("nobody") == []


def test_unregister_removes_by_connection_or_client_id_and_empties_the_group() -> None:
    table = ConsumerManager(clock=FakeClock())
    a, b, c = conn(), conn(), conn()
    beat(table, a, "c1", data("g", SUB_T))
    beat(table, b, "c2", data("g", SUB_T))
    beat(table, c, "c2", data("g", SUB_T))
    assert table.unregister("g", a, "")  # by its connection
    assert table.client_ids("g") == ["c2"]
    assert table.unregister("g", conn(), "c2")  # by id, from another connection: both go
    assert table.group("g") is None and table.groups() == []
    assert not table.unregister("g", a, "c1")  # nothing left to remove: no change
    assert not table.unregister("never", a, "c1")


def test_a_closed_connection_leaves_every_group_it_was_in() -> None:
    table = ConsumerManager(clock=FakeClock())
    a, b = conn(), conn()
    for group in ("g2", "g1", "g3"):
        beat(table, a, "c1", data(group, SUB_T))
    beat(table, b, "c2", data("g1", SUB_T))
    assert table.remove_connection(a) == ["g1", "g2", "g3"]  # sorted: notified in order
    assert table.groups() == ["g1"]  # the others emptied and went
    assert table.client_ids("g1") == ["c2"]
    assert table.remove_connection(a) == []  # once only


def test_unregistering_one_group_keeps_the_connection_in_the_others() -> None:
    table = ConsumerManager(clock=FakeClock())
    a = conn()
    beat(table, a, "c1", data("g1", SUB_T))
    beat(table, a, "c1", data("g2", SUB_T))
    assert table.unregister("g1", a, "c1")
    assert table.remove_connection(a) == ["g2"]


# ---------------------------------------------------------------------- silence


def test_a_connection_is_silent_once_every_group_it_beats_for_is_old() -> None:
    clock = FakeClock()
    table = ConsumerManager(clock=clock)
    a, b = conn(), conn()
    beat(table, a, "c1", data("g1", SUB_T))
    beat(table, a, "c1", data("g2", SUB_T))
    beat(table, b, "c2", data("g1", SUB_T))
    clock.now += 100
    beat(table, a, "c1", data("g2", SUB_T))  # a still beats for g2
    assert table.silent_connections(older_than_s=50) == [b]
    clock.now += 50
    assert table.silent_connections(older_than_s=50) == [b]  # exactly 50 s: not yet for a
    clock.now += 0.001
    assert set(table.silent_connections(older_than_s=50)) == {a, b}
    # Closing them removes them (the broker's close callback calls remove_connection).
    for gone in table.silent_connections(older_than_s=50):
        table.remove_connection(gone)
    assert table.groups() == [] and table.silent_connections(older_than_s=0) == []
