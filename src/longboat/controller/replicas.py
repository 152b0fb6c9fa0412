"""The controller's replica state machine (RocketMQ 5's ReplicasInfoManager), pure.

Per broker group (broker name) the table keeps:

* the members: broker id -> address, and the register check code ("address;timestamp") the
  id was applied with; ids are handed out by the controller, from 1 up, never reused;
* the master's id (None before the first election and after a failed one), the master
  epoch, the SyncStateSet (ids the master counts as in sync) and its epoch.

Invariants, kept by `apply` alone:

* the master epoch only grows: +1 at every election, successful or not;
* the SyncStateSet epoch only grows: +1 at every change of the set, an election included;
* after a successful election the set is exactly {new master};
* a set change is taken only from the current master at the current master epoch and set
  epoch, only with members that are alive, and always keeps the master (older epochs are
  fenced, which is what stops a deposed master from shrinking the set to itself);
* an election picks among the alive members of the SyncStateSet (the one with the highest
  epoch, then the longest log, then the lowest election priority, then the lowest id); only
  with `unclean` among every alive member; a still-alive master stays.

Every change is a `Command` whose outcome depends only on the table and the command itself:
what is alive is measured by the controller that leads (`heartbeats.py`) and written into
the command, so each controller replaying the Raft log reaches the same table.  Nothing here
reads a clock, a file or a socket; reads (`replica_info`, `sync_state_data`, `next_broker_id`)
do not change the table and are not replicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from longboat.protocol import ResponseCode
from longboat.protocol.controller import (
    FIRST_BROKER_CONTROLLER_ID,
    BrokerReplicasInfo,
    ReplicaIdentity,
    ReplicasInfo,
)


@dataclass(frozen=True, slots=True)
class LiveInfo:
    """What the leading controller last heard from one alive broker (its heartbeat)."""

    broker_id: int
    epoch: int = 0
    max_offset: int = 0
    election_priority: int = 0


@dataclass(frozen=True, slots=True)
class ApplyBrokerId:
    cluster_name: str
    broker_name: str
    broker_id: int
    register_check_code: str


@dataclass(frozen=True, slots=True)
class RegisterBroker:
    cluster_name: str
    broker_name: str
    broker_id: int
    broker_address: str
    alive: frozenset[int]


@dataclass(frozen=True, slots=True)
class ElectMaster:
    """broker_id -1: the controller's own election; `designate`: exactly this broker."""

    broker_name: str
    broker_id: int
    designate: bool
    alive: tuple[LiveInfo, ...]
    unclean: bool = False


@dataclass(frozen=True, slots=True)
class AlterSyncStateSet:
    broker_name: str
    master_broker_id: int
    master_epoch: int
    new_set: frozenset[int]
    set_epoch: int
    alive: frozenset[int]


@dataclass(frozen=True, slots=True)
class CleanBrokerData:
    """Forget the given ids of a group (all of it when empty); alive ones only when asked."""

    broker_name: str
    broker_ids: frozenset[int]
    clean_living: bool
    alive: frozenset[int]


@dataclass(frozen=True, slots=True)
class Barrier:
    """Changes nothing.  A controller that has just become the leader submits one and leads
    only once it is applied: Raft applies in log order, so its table then holds every
    command committed before its term, and nothing it answers is older than what an earlier
    leader already answered."""


Command = (
    ApplyBrokerId | RegisterBroker | ElectMaster | AlterSyncStateSet | CleanBrokerData | Barrier
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A command's answer: the response code and what the response headers and body carry."""

    code: ResponseCode = ResponseCode.SUCCESS
    remark: str | None = None
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None
    sync_state_set: frozenset[int] | None = None
    broker_addrs: dict[int, str] | None = None

    @property
    def ok(self) -> bool:
        return self.code == ResponseCode.SUCCESS


def _refuse(code: ResponseCode, remark: str) -> Outcome:
    return Outcome(code, remark)


@dataclass(slots=True)
class GroupState:
    cluster_name: str
    broker_name: str
    addresses: dict[int, str] = field(default_factory=dict)
    check_codes: dict[int, str] = field(default_factory=dict)
    next_id: int = FIRST_BROKER_CONTROLLER_ID
    master_id: int | None = None
    master_epoch: int = 0
    sync_state_set: frozenset[int] = frozenset()
    sync_state_set_epoch: int = 0

    def elected(self, master: int | None) -> None:
        self.master_id = master
        self.master_epoch += 1
        if master is not None:
            self.set_sync_state_set(frozenset({master}))

    def set_sync_state_set(self, members: frozenset[int]) -> None:
        self.sync_state_set = members
        self.sync_state_set_epoch += 1

    def master_outcome(
        self, code: ResponseCode = ResponseCode.SUCCESS, remark: str | None = None
    ) -> Outcome:
        return Outcome(
            code,
            remark,
            master_broker_id=self.master_id,
            master_address=self.addresses.get(self.master_id)
            if self.master_id is not None
            else None,
            master_epoch=self.master_epoch,
            sync_state_set_epoch=self.sync_state_set_epoch,
            sync_state_set=self.sync_state_set,
            broker_addrs=dict(self.addresses),
        )


def pick_master(candidates: list[LiveInfo]) -> int | None:
    """RocketMQ's DefaultElectPolicy order: highest epoch, longest log, lowest priority."""
    if not candidates:
        return None
    best = min(
        candidates, key=lambda c: (-c.epoch, -c.max_offset, c.election_priority, c.broker_id)
    )
    return best.broker_id


class ReplicaTable:
    """Every broker group's replica state; changed only through `apply`."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupState] = {}

    def apply(self, cmd: Command) -> Outcome:
        match cmd:
            case ApplyBrokerId():
                return self._apply_broker_id(cmd)
            case RegisterBroker():
                return self._register(cmd)
            case ElectMaster():
                return self._elect(cmd)
            case AlterSyncStateSet():
                return self._alter(cmd)
            case CleanBrokerData():
                return self._clean(cmd)
            case Barrier():
                return Outcome()

    # ------------------------------------------------------------------ reads

    def next_broker_id(self, broker_name: str) -> int:
        group = self.groups.get(broker_name)
        return group.next_id if group is not None else FIRST_BROKER_CONTROLLER_ID

    def replica_info(self, broker_name: str) -> Outcome:
        group = self.groups.get(broker_name)
        if group is None:
            return _refuse(
                ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed"
            )
        return group.master_outcome()

    def sync_state_data(
        self, broker_names: list[str], alive: dict[str, frozenset[int]]
    ) -> BrokerReplicasInfo:
        table: dict[str, ReplicasInfo] = {}
        for name in broker_names:
            group = self.groups.get(name)
            if group is None:
                continue
            living = alive.get(name, frozenset())
            members = [
                ReplicaIdentity(name, bid, addr, bid in living)
                for bid, addr in sorted(group.addresses.items())
            ]
            table[name] = ReplicasInfo(
                group.master_id,
                group.addresses.get(group.master_id) if group.master_id is not None else None,
                group.master_epoch,
                group.sync_state_set_epoch,
                tuple(m for m in members if m.broker_id in group.sync_state_set),
                tuple(m for m in members if m.broker_id not in group.sync_state_set),
            )
        return BrokerReplicasInfo(table)

    # ------------------------------------------------------------------ changes

    def _apply_broker_id(self, cmd: ApplyBrokerId) -> Outcome:
        group = self.groups.get(cmd.broker_name)
        address = cmd.register_check_code.split(";")[0]
        if group is None:
            if cmd.broker_id != FIRST_BROKER_CONTROLLER_ID:
                return _refuse(
                    ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                    f"Broker-set: {cmd.broker_name} hasn't been registered in controller, "
                    f"but broker try to apply brokerId: {cmd.broker_id}",
                )
            group = self.groups[cmd.broker_name] = GroupState(cmd.cluster_name, cmd.broker_name)
        elif (
            cmd.broker_id in group.addresses
            and group.check_codes.get(cmd.broker_id) != cmd.register_check_code
        ):
            return _refuse(
                ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                f"Fail to apply brokerId: {cmd.broker_id} in broker-set: {cmd.broker_name}",
            )
        group.addresses[cmd.broker_id] = address
        group.check_codes[cmd.broker_id] = cmd.register_check_code
        group.next_id = max(group.next_id, cmd.broker_id + 1)
        return Outcome()

    def _register(self, cmd: RegisterBroker) -> Outcome:
        group = self.groups.get(cmd.broker_name)
        if group is None or cmd.broker_id not in group.addresses:
            return _refuse(
                ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"BrokerId: {cmd.broker_id} hasn't been registered in broker-set: "
                f"{cmd.broker_name}",
            )
        group.addresses[cmd.broker_id] = cmd.broker_address
        outcome = group.master_outcome()
        if group.master_id is None or group.master_id not in cmd.alive:
            # No living master to follow: the broker asks for an election next.
            return Outcome(
                sync_state_set=group.sync_state_set,
                sync_state_set_epoch=group.sync_state_set_epoch,
            )
        return outcome

    def _elect(self, cmd: ElectMaster) -> Outcome:
        group = self.groups.get(cmd.broker_name)
        if group is None:
            return _refuse(
                ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                "Broker hasn't been registered",
            )
        alive = {c.broker_id: c for c in cmd.alive if c.broker_id in group.addresses}
        new_master: int | None = None
        if group.master_epoch == 0 and cmd.broker_id in alive:
            new_master = cmd.broker_id  # the group's first election: the first to ask
        else:
            prefer = cmd.broker_id if cmd.designate else None
            pools = [group.sync_state_set] + ([frozenset(group.addresses)] if cmd.unclean else [])
            for pool in pools:
                living = [alive[b] for b in sorted(pool) if b in alive]
                if not living:
                    continue
                ids = {c.broker_id for c in living}
                if group.master_id in ids and prefer in (None, group.master_id):
                    new_master = group.master_id
                elif prefer is not None:
                    new_master = prefer if prefer in ids else None
                else:
                    new_master = pick_master(living)
                break
        if new_master is not None and new_master == group.master_id:
            return group.master_outcome(
                ResponseCode.CONTROLLER_MASTER_STILL_EXIST,
                f"The old master {new_master} is still alive, not need to elect new master "
                f"for broker {cmd.broker_name}",
            )
        if new_master is not None:
            group.elected(new_master)
            return group.master_outcome()
        if cmd.broker_id == -1:
            # The controller's own election found nobody: record that the master is gone.
            group.elected(None)
            return _refuse(
                ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                "Old master has down and failed to elect a new broker master",
            )
        return _refuse(ResponseCode.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master")

    def _alter(self, cmd: AlterSyncStateSet) -> Outcome:
        group = self.groups.get(cmd.broker_name)
        if group is None:
            return _refuse(
                ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "Broker metadata is not existed",
            )
        if cmd.new_set == group.sync_state_set:
            return _refuse(
                ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "The newSyncStateSet is equal with oldSyncStateSet, "
                "no needed to update syncStateSet",
            )
        if group.master_id is None or group.master_id != cmd.master_broker_id:
            return _refuse(
                ResponseCode.CONTROLLER_INVALID_MASTER,
                f"Rejecting alter syncStateSet request because the current leader is:"
                f"{{{group.master_id}}}, not {{{cmd.master_broker_id}}}",
            )
        if cmd.master_epoch != group.master_epoch:
            return _refuse(
                ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH,
                f"Rejecting alter syncStateSet request because the current master epoch is:"
                f"{{{group.master_epoch}}}, not {{{cmd.master_epoch}}}",
            )
        if cmd.set_epoch != group.sync_state_set_epoch:
            return _refuse(
                ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                f"Rejecting alter syncStateSet request because the current syncStateSet epoch "
                f"is:{{{group.sync_state_set_epoch}}}, not {{{cmd.set_epoch}}}",
            )
        for replica in sorted(cmd.new_set):
            if replica not in group.addresses:
                return _refuse(
                    ResponseCode.CONTROLLER_INVALID_REPLICAS,
                    f"Rejecting alter syncStateSet request because the replicas {{{replica}}} "
                    "don't exist",
                )
            if replica not in cmd.alive:
                return _refuse(
                    ResponseCode.CONTROLLER_BROKER_NOT_ALIVE,
                    f"Rejecting alter syncStateSet request because the replicas {{{replica}}} "
                    "don't alive",
                )
        if group.master_id not in cmd.new_set:
            return _refuse(
                ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "Rejecting alter syncStateSet request because the newSyncStateSet don't "
                f"contains origin leader {{{group.master_id}}}",
            )
        group.set_sync_state_set(cmd.new_set)
        return Outcome(
            sync_state_set=group.sync_state_set, sync_state_set_epoch=group.sync_state_set_epoch
        )

    def _clean(self, cmd: CleanBrokerData) -> Outcome:
        group = self.groups.get(cmd.broker_name)
        if group is None:
            return _refuse(
                ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                f"Broker {cmd.broker_name} is not existed",
            )
        ids = cmd.broker_ids or frozenset(group.addresses)
        living = ids & cmd.alive
        if living and not cmd.clean_living:
            return _refuse(
                ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                f"Broker ids {sorted(living)} of {cmd.broker_name} are still alive",
            )
        if ids >= frozenset(group.addresses):
            del self.groups[cmd.broker_name]
            return Outcome()
        for bid in ids:
            group.addresses.pop(bid, None)
            group.check_codes.pop(bid, None)
        if group.sync_state_set & ids:
            group.sync_state_set -= ids
        if group.master_id in ids:
            group.master_id = None
        return Outcome()
