"""RocketMQ 5's controller protocol (RIP-44): the headers and JSON bodies of codes 904 and
1001-1013, with RocketMQ 5.3's field names (they are the ext-field and JSON keys).

A broker group's replica state travels as three numbers and a set: the master's broker id,
the master epoch (bumped at every election), the SyncStateSet (the ids of the replicas the
master counts as in sync) and its epoch (bumped at every change of the set, elections
included).  A request carrying an older epoch than the controller's is fenced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from longboat.protocol import fastjson
from longboat.protocol.errors import ProtocolError
from longboat.protocol.header_fields import Header, JavaInt

# The first id the controller hands out in a broker group (MixAll.FIRST_BROKER_CONTROLLER_ID).
FIRST_BROKER_CONTROLLER_ID = 1


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequestHeader(Header):
    """BROKER_HEARTBEAT (904): a broker's liveness and log end, what the election compares."""

    clusterName: str
    brokerAddr: str
    brokerName: str
    brokerId: int | None = None
    epoch: JavaInt | None = None
    maxOffset: int | None = None
    confirmOffset: int | None = None
    heartbeatTimeoutMills: int | None = None
    electionPriority: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class BrokerGroupHeader(Header):
    """One broker group: GET_NEXT_BROKER_ID's request, APPLY_BROKER_ID's answer
    (ApplyBrokerIdResponseHeader), and the opening of the headers below that extend it (a
    subclass's own fields follow, as in the Java declaration)."""

    clusterName: str
    brokerName: str


GetNextBrokerIdRequestHeader = BrokerGroupHeader
BrokerGroupResponseHeader = BrokerGroupHeader


@dataclass(frozen=True, slots=True)
class GetNextBrokerIdResponseHeader(BrokerGroupHeader):
    nextBrokerId: int | None = None


@dataclass(frozen=True, slots=True)
class ApplyBrokerIdRequestHeader(BrokerGroupHeader):
    """`registerCheckCode` is "address;timestamp": it tells a broker re-applying for its own
    id from another broker taking an id already given out."""

    appliedBrokerId: int
    registerCheckCode: str


@dataclass(frozen=True, slots=True)
class RegisterBrokerToControllerRequestHeader(BrokerGroupHeader):
    brokerId: int
    brokerAddress: str
    invokeTime: int = 0


@dataclass(frozen=True, slots=True)
class RegisterBrokerToControllerResponseHeader(Header):
    clusterName: str | None = None
    brokerName: str | None = None
    masterBrokerId: int | None = None
    masterAddress: str | None = None
    masterEpoch: JavaInt | None = None
    syncStateSetEpoch: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class ElectMasterRequestHeader(Header):
    """brokerId -1: the controller's own election (its master died); designateElect: make
    exactly this broker master (an operator's choice)."""

    clusterName: str = ""
    brokerName: str = ""
    brokerId: int = -1
    designateElect: bool = False
    invokeTime: int = 0


@dataclass(frozen=True, slots=True)
class ElectMasterResponseHeader(Header):
    masterBrokerId: int | None = None
    masterAddress: str | None = None
    masterEpoch: JavaInt | None = None
    syncStateSetEpoch: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class AlterSyncStateSetRequestHeader(Header):
    """The body is the new SyncStateSet with the epoch it was computed from."""

    brokerName: str
    masterBrokerId: int
    masterEpoch: JavaInt
    invokeTime: int = 0


@dataclass(frozen=True, slots=True)
class AlterSyncStateSetResponseHeader(Header):
    newSyncStateSetEpoch: JavaInt = 0


@dataclass(frozen=True, slots=True)
class GetReplicaInfoRequestHeader(Header):
    brokerName: str


@dataclass(frozen=True, slots=True)
class GetReplicaInfoResponseHeader(Header):
    masterBrokerId: int | None = None
    masterAddress: str | None = None
    masterEpoch: JavaInt | None = None


@dataclass(frozen=True, slots=True)
class GetMetaDataResponseHeader(Header):
    """CONTROLLER_GET_METADATA_INFO (1005): who leads the controllers, and the peers as
    "id:host:port;..."."""

    group: str | None = None
    controllerLeaderId: str | None = None
    controllerLeaderAddress: str | None = None
    isLeader: bool = False
    peers: str | None = None


@dataclass(frozen=True, slots=True)
class CleanControllerBrokerDataRequestHeader(Header):
    """brokerControllerIdsToClean: ids separated by ";", empty for the whole group."""

    brokerName: str
    clusterName: str | None = None
    brokerControllerIdsToClean: str | None = None
    isCleanLivingBroker: bool = False
    invokeTime: int = 0


@dataclass(frozen=True, slots=True)
class NotifyBrokerRoleChangedRequestHeader(Header):
    """NOTIFY_BROKER_ROLE_CHANGED (1008), controller to broker after an election; the body
    is the new SyncStateSet."""

    masterAddress: str | None = None
    masterEpoch: JavaInt | None = None
    syncStateSetEpoch: JavaInt | None = None
    masterBrokerId: int | None = None


# --------------------------------------------------------------------------- bodies


def _object(body: bytes, what: str) -> dict[str, Any]:
    value = fastjson.loads(body) if body else {}
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return value


def _ids(value: Any, what: str) -> frozenset[int]:
    if not isinstance(value, list | tuple):
        raise ProtocolError(f"{what} is not a list of broker ids")
    try:
        return frozenset(int(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"{what}: {exc}") from None


@dataclass(frozen=True, slots=True)
class SyncStateSet:
    """The body of ALTER_SYNC_STATE_SET, REGISTER_BROKER_TO_CONTROLLER, GET_REPLICA_INFO."""

    sync_state_set: frozenset[int]
    sync_state_set_epoch: int

    def to_json(self) -> bytes:
        return fastjson.dumps(
            {
                "syncStateSet": sorted(self.sync_state_set),
                "syncStateSetEpoch": self.sync_state_set_epoch,
            }
        )

    @classmethod
    def from_json(cls, body: bytes) -> SyncStateSet:
        d = _object(body, "SyncStateSet")
        return cls(
            _ids(d.get("syncStateSet", []), "syncStateSet"), int(d.get("syncStateSetEpoch", 0))
        )


@dataclass(frozen=True, slots=True)
class ElectMasterResponseBody:
    cluster_name: str
    broker_name: str
    broker_addrs: dict[int, str]
    sync_state_set: frozenset[int]

    def to_json(self) -> bytes:
        return fastjson.dumps(
            {
                "brokerMemberGroup": {
                    "cluster": self.cluster_name,
                    "brokerName": self.broker_name,
                    "brokerAddrs": {str(k): v for k, v in sorted(self.broker_addrs.items())},
                },
                "syncStateSet": sorted(self.sync_state_set),
            }
        )


@dataclass(frozen=True, slots=True)
class ReplicaIdentity:
    broker_name: str
    broker_id: int
    broker_address: str
    alive: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "alive": self.alive,
            "brokerAddress": self.broker_address,
            "brokerId": self.broker_id,
            "brokerName": self.broker_name,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReplicaIdentity:
        return cls(
            str(d.get("brokerName", "")),
            int(d.get("brokerId", -1)),
            str(d.get("brokerAddress", "")),
            bool(d.get("alive", False)),
        )


@dataclass(frozen=True, slots=True)
class ReplicasInfo:
    """One group in GET_SYNC_STATE_DATA's answer (BrokerReplicasInfo.ReplicasInfo)."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    in_sync_replicas: tuple[ReplicaIdentity, ...] = ()
    not_in_sync_replicas: tuple[ReplicaIdentity, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "inSyncReplicas": [r.to_dict() for r in self.in_sync_replicas],
            "masterAddress": self.master_address,
            "masterBrokerId": self.master_broker_id,
            "masterEpoch": self.master_epoch,
            "notInSyncReplicas": [r.to_dict() for r in self.not_in_sync_replicas],
            "syncStateSetEpoch": self.sync_state_set_epoch,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReplicasInfo:
        master = d.get("masterBrokerId")
        return cls(
            int(master) if master is not None else None,
            d.get("masterAddress"),
            int(d.get("masterEpoch", 0)),
            int(d.get("syncStateSetEpoch", 0)),
            tuple(ReplicaIdentity.from_dict(r) for r in d.get("inSyncReplicas") or ()),
            tuple(ReplicaIdentity.from_dict(r) for r in d.get("notInSyncReplicas") or ()),
        )


@dataclass(frozen=True, slots=True)
class BrokerReplicasInfo:
    """CONTROLLER_GET_SYNC_STATE_DATA's answer: the request body is a JSON list of broker
    names, the answer maps each known one to its ReplicasInfo."""

    replicas_info_table: dict[str, ReplicasInfo] = field(default_factory=dict)

    def to_json(self) -> bytes:
        table = {name: info.to_dict() for name, info in sorted(self.replicas_info_table.items())}
        return fastjson.dumps({"replicasInfoTable": table})

    @classmethod
    def from_json(cls, body: bytes) -> BrokerReplicasInfo:
        table = _object(body, "BrokerReplicasInfo").get("replicasInfoTable") or {}
        if not isinstance(table, dict):
            raise ProtocolError("replicasInfoTable is not a JSON object")
        return cls({str(k): ReplicasInfo.from_dict(v) for k, v in table.items()})


def decode_broker_names(body: bytes) -> list[str]:
    """GET_SYNC_STATE_DATA's request body: a JSON list of broker names."""
    value = fastjson.loads(body) if body else []
    if not isinstance(value, list):
        raise ProtocolError("the broker names are not a JSON list")
    return [str(v) for v in value]


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """One master term in a broker's log: from `start_offset` (inclusive) to `end_offset`
    (exclusive; the log's end for the last entry)."""

    epoch: int
    start_offset: int
    end_offset: int = 2**63 - 1

    def to_dict(self) -> dict[str, Any]:
        return {"endOffset": self.end_offset, "epoch": self.epoch, "startOffset": self.start_offset}


@dataclass(frozen=True, slots=True)
class EpochEntryCache:
    """GET_BROKER_EPOCH_CACHE's answer: a broker's epoch entries and its log end."""

    cluster_name: str
    broker_name: str
    broker_id: int
    epoch_list: tuple[EpochEntry, ...]
    max_offset: int

    def to_json(self) -> bytes:
        return fastjson.dumps(
            {
                "brokerId": self.broker_id,
                "brokerName": self.broker_name,
                "clusterName": self.cluster_name,
                "epochList": [e.to_dict() for e in self.epoch_list],
                "maxOffset": self.max_offset,
            }
        )

    @classmethod
    def from_json(cls, body: bytes) -> EpochEntryCache:
        d = _object(body, "EpochEntryCache")
        entries = tuple(
            EpochEntry(int(e["epoch"]), int(e["startOffset"]), int(e.get("endOffset", 2**63 - 1)))
            for e in d.get("epochList") or ()
        )
        return cls(
            str(d.get("clusterName", "")),
            str(d.get("brokerName", "")),
            int(d.get("brokerId", -1)),
            entries,
            int(d.get("maxOffset", 0)),
        )
