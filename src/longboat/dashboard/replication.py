"""The Replication page: every broker group with its master, its slaves and how far each slave
is behind (in bytes, and in seconds from the sampler's history of each master's commit-log
end), and in controller mode the group's SyncStateSet and epochs.

One view serves both ways a group replicates.  Master-slave groups are read from the name
server (who is registered under which id) and the brokers' runtime info (commit-log ends);
groups in controller mode add what the leading controller keeps
(CONTROLLER_GET_SYNC_STATE_DATA), found through the brokers' own `controllerAddr`
(`longboat.client.replication`).  A member is matched to the controller's replicas by its
address: the name server lists a controller-mode master under id 0, while the controller
knows it by the id it assigned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from longboat.client.admin import Admin
from longboat.client.errors import ClientError
from longboat.client.replication import (
    controllers_of,
    log_ends,
    replication_lag,
    seconds_behind,
    slave_ends,
)
from longboat.dashboard.admin_json import Json
from longboat.protocol.bodies import ClusterInfo
from longboat.protocol.controller import ReplicasInfo
from longboat.protocol.types import MASTER_ID


async def replication_view(
    admin: Admin, histories: Mapping[str, Sequence[tuple[float, int]]], now: float
) -> Json:
    """`{"groups": [...], "controllers": [addr, ...], "controllerError": text | null}`; each
    group `{cluster, broker, members: [...], controller: ReplicasInfo's JSON | null}`.
    `histories` holds each master's sampled commit-log ends (by address), `now` the time on
    the same clock."""
    info = await admin.cluster_info()
    addrs = [addr for *_, addr in info.members()]
    ends = await log_ends(admin, addrs)
    controllers = await controllers_of(admin, addrs)
    replicas: dict[str, ReplicasInfo] = {}
    controller_error = None
    if controllers:
        try:
            answer = await admin.sync_state_data(controllers, sorted(info.broker_addr_table))
            replicas = answer.replicas_info_table
        except ClientError as exc:
            controller_error = f"no controller answered: {exc}"
    groups = [
        group_json(info, cluster, name, ends, replicas.get(name), Lag(histories, now))
        for cluster, names in sorted(info.cluster_addr_table.items())
        for name in sorted(names)
        if name in info.broker_addr_table
    ]
    return {"groups": groups, "controllers": controllers, "controllerError": controller_error}


@dataclass(frozen=True, slots=True)
class Lag:
    """What a slave's lag in seconds is measured against: each master's sampled (time,
    commit-log end) by address, and the time now on the same clock."""

    histories: Mapping[str, Sequence[tuple[float, int]]]
    now: float


def group_json(
    info: ClusterInfo,
    cluster: str,
    name: str,
    ends: dict[str, int | None],
    replicas: ReplicasInfo | None,
    lag: Lag,
) -> Json:
    in_sync = {r.broker_address for r in replicas.in_sync_replicas} if replicas else set()
    members = [
        {
            "id": broker_id,
            "role": "master" if broker_id == MASTER_ID else "slave",
            "addr": addr,
            "logEnd": ends.get(addr),
            "behind": replication_lag(info, name, broker_id, ends),
            **seconds_json(info, name, broker_id, ends, lag),
            # Null outside controller mode: no SyncStateSet to be in.
            "inSyncStateSet": (addr in in_sync) if replicas else None,
        }
        for broker_id, addr in sorted(info.broker_addr_table[name].broker_addrs.items())
    ]
    return {
        "cluster": cluster,
        "broker": name,
        "members": members,
        "controller": replicas.to_dict() if replicas else None,
    }


def seconds_json(
    info: ClusterInfo, name: str, broker_id: int, ends: dict[str, int | None], lag: Lag
) -> Json:
    """`{behindSeconds: s | null, behindSecondsAtLeast: bool}`: null for a master, when an
    end is unknown, or when a slave is behind and its master's end was not sampled yet."""
    known = slave_ends(info, name, broker_id, ends)
    behind = None
    if known is not None:
        history = lag.histories.get(known.master, ())
        behind = seconds_behind(history, known.master_end, known.own_end, lag.now)
    if behind is None:
        return {"behindSeconds": None, "behindSecondsAtLeast": False}
    return {"behindSeconds": round(behind.seconds, 1), "behindSecondsAtLeast": behind.at_least}
