"""The replica state machine and the heartbeat table driven by hand (no sockets, fake clock)."""

from __future__ import annotations

import pytest

from longboat.controller.heartbeats import BrokerHeartbeats
from longboat.controller.replicas import (
    AlterSyncStateSet,
    ApplyBrokerId,
    CleanBrokerData,
    ElectMaster,
    LiveInfo,
    RegisterBroker,
    ReplicaTable,
)
from longboat.protocol import ResponseCode

ADDRS = {1: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}


def group_of_three() -> ReplicaTable:
    """broker-a with ids 1-3 registered, 1 elected master, all three in sync."""
    table = ReplicaTable()
    for bid, addr in ADDRS.items():
        assert table.next_broker_id("broker-a") == bid
        assert table.apply(ApplyBrokerId("c", "broker-a", bid, f"{addr};{bid}")).ok
        assert table.apply(RegisterBroker("c", "broker-a", bid, addr, frozenset())).ok
    first = table.apply(ElectMaster("broker-a", 1, False, (LiveInfo(1),)))
    assert (first.master_broker_id, first.master_epoch, first.sync_state_set) == (1, 1, {1})
    grown = table.apply(
        AlterSyncStateSet("broker-a", 1, 1, frozenset({1, 2, 3}), 1, frozenset(ADDRS))
    )
    assert grown.ok and grown.sync_state_set_epoch == 2
    return table


def test_broker_ids_are_handed_out_once_and_reapplied_by_their_owner() -> None:
    table = group_of_three()
    assert table.next_broker_id("broker-a") == 4
    # The same broker (same check code) may apply for its id again, another may not.
    assert table.apply(ApplyBrokerId("c", "broker-a", 2, f"{ADDRS[2]};2")).ok
    taken = table.apply(ApplyBrokerId("c", "broker-a", 2, "10.9.9.9:1;7"))
    assert taken.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    # A new group starts at id 1 only.
    wrong = table.apply(ApplyBrokerId("c", "broker-b", 5, "x:1;1"))
    assert wrong.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID


def test_register_names_the_master_only_while_it_is_alive() -> None:
    table = group_of_three()
    alive = table.apply(RegisterBroker("c", "broker-a", 2, ADDRS[2], frozenset({1, 2})))
    assert (alive.master_broker_id, alive.master_address) == (1, ADDRS[1])
    dead = table.apply(RegisterBroker("c", "broker-a", 2, ADDRS[2], frozenset({2})))
    assert dead.master_broker_id is None and dead.sync_state_set == {1, 2, 3}
    unknown = table.apply(RegisterBroker("c", "broker-a", 9, "x:1", frozenset()))
    assert unknown.code == ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED


@pytest.mark.parametrize(
    ("alive", "unclean", "code", "master"),
    [
        # The master is alive: it stays.
        ((LiveInfo(1), LiveInfo(2)), False, ResponseCode.CONTROLLER_MASTER_STILL_EXIST, 1),
        # The longest log among the in-sync survivors wins.
        ((LiveInfo(2, 1, 100), LiveInfo(3, 1, 200)), False, ResponseCode.SUCCESS, 3),
        # A higher epoch beats a longer log.
        ((LiveInfo(2, 2, 100), LiveInfo(3, 1, 200)), False, ResponseCode.SUCCESS, 2),
        # Equal logs: the lower election priority.
        ((LiveInfo(2, 1, 5, 3), LiveInfo(3, 1, 5, 1)), False, ResponseCode.SUCCESS, 3),
        # Nobody alive: the master is recorded gone.
        ((), False, ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE, None),
    ],
)
def test_controller_election(
    alive: tuple[LiveInfo, ...], unclean: bool, code: ResponseCode, master: int | None
) -> None:
    table = group_of_three()
    outcome = table.apply(ElectMaster("broker-a", -1, False, alive, unclean))
    assert outcome.code == code
    group = table.groups["broker-a"]
    assert group.master_id == master
    if code == ResponseCode.SUCCESS:
        assert (group.master_epoch, group.sync_state_set, group.sync_state_set_epoch) == (
            2,
            {master},
            3,
        )


def test_out_of_sync_replicas_win_only_an_unclean_election() -> None:
    table = group_of_three()
    shrunk = table.apply(AlterSyncStateSet("broker-a", 1, 1, frozenset({1}), 2, frozenset({1})))
    assert shrunk.ok and shrunk.sync_state_set_epoch == 3
    clean = table.apply(ElectMaster("broker-a", -1, False, (LiveInfo(2),)))
    assert clean.code == ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE
    assert table.groups["broker-a"].sync_state_set == {1}  # kept: only 1 may come back clean
    unclean = table.apply(ElectMaster("broker-a", 2, False, (LiveInfo(2),), unclean=True))
    assert unclean.ok and unclean.master_broker_id == 2 and unclean.master_epoch == 3


@pytest.mark.parametrize(
    ("master", "master_epoch", "new_set", "set_epoch", "alive", "code"),
    [
        (2, 1, {1, 2}, 2, {1, 2, 3}, ResponseCode.CONTROLLER_INVALID_MASTER),
        (1, 0, {1, 2}, 2, {1, 2, 3}, ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH),
        (1, 1, {1, 2}, 1, {1, 2, 3}, ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH),
        (1, 1, {1, 7}, 2, {1, 2, 3}, ResponseCode.CONTROLLER_INVALID_REPLICAS),
        (1, 1, {1, 2}, 2, {1, 3}, ResponseCode.CONTROLLER_BROKER_NOT_ALIVE),
        (1, 1, {2, 3}, 2, {1, 2, 3}, ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED),
        (1, 1, {1, 2, 3}, 2, {1, 2, 3}, ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED),
        (1, 1, {1, 2}, 2, {1, 2}, ResponseCode.SUCCESS),
    ],
)
def test_sync_state_set_changes_are_fenced(
    master: int,
    master_epoch: int,
    new_set: set[int],
    set_epoch: int,
    alive: set[int],
    code: ResponseCode,
) -> None:
    table = group_of_three()
    cmd = AlterSyncStateSet(
        "broker-a", master, master_epoch, frozenset(new_set), set_epoch, frozenset(alive)
    )
    outcome = table.apply(cmd)
    assert outcome.code == code
    expected = new_set if code == ResponseCode.SUCCESS else {1, 2, 3}
    assert table.groups["broker-a"].sync_state_set == expected


def test_a_deposed_master_is_fenced() -> None:
    table = group_of_three()
    assert table.apply(ElectMaster("broker-a", -1, False, (LiveInfo(2), LiveInfo(3)))).ok
    old = table.apply(AlterSyncStateSet("broker-a", 1, 1, frozenset({1}), 2, frozenset({1})))
    assert old.code == ResponseCode.CONTROLLER_INVALID_MASTER


def test_sync_state_data_and_clean() -> None:
    table = group_of_three()
    info = table.sync_state_data(["broker-a", "nope"], {"broker-a": frozenset({1, 2})})
    group = info.replicas_info_table["broker-a"]
    assert [(r.broker_id, r.alive) for r in group.in_sync_replicas] == [
        (1, True),
        (2, True),
        (3, False),
    ]
    assert "nope" not in info.replicas_info_table
    refused = table.apply(CleanBrokerData("broker-a", frozenset({2}), False, frozenset({2})))
    assert refused.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert table.apply(CleanBrokerData("broker-a", frozenset({3}), False, frozenset({1}))).ok
    assert sorted(table.groups["broker-a"].addresses) == [1, 2]
    assert table.groups["broker-a"].sync_state_set == {1, 2}
    assert table.next_broker_id("broker-a") == 4  # ids are never reused


def test_heartbeats_expire_and_a_new_leader_waits_one_timeout() -> None:
    beats = BrokerHeartbeats(now=100.0, default_timeout_s=10.0)
    # Just after leadership: silent brokers count as alive, and the scan waits.
    assert beats.is_alive("broker-a", 1, 105.0) and beats.in_grace(105.0)
    assert not beats.is_alive("broker-a", 1, 110.0) and not beats.in_grace(110.0)
    beats.beat("broker-a", "x:1", LiveInfo(1, 1, 50), 110.0, 3.0)
    assert beats.alive_ids("broker-a", [1, 2], 112.9) == {1}
    assert beats.live_infos("broker-a", [1, 2], 112.9) == (LiveInfo(1, 1, 50),)
    assert beats.alive_ids("broker-a", [1, 2], 113.0) == frozenset()
    beats.reset(200.0)
    assert beats.alive_ids("broker-a", [1, 2], 200.0) == {1, 2}
