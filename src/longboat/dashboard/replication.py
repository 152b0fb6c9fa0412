"""The Replication page: every broker group with its master, its slaves and how far each slave
is behind, and in controller mode the group's SyncStateSet and epochs.

One view serves both ways a group replicates.  Master-slave groups are read from the name
server (who is registered under which id) and the brokers' runtime info (commit-log ends);
groups in controller mode add what the leading controller keeps
(CONTROLLER_GET_SYNC_STATE_DATA), found through the brokers' own `controllerAddr`
(`longboat.client.replication`).  A member is matched to the controller's replicas by its
address: the name server lists a controller-mode master under id 0, while the controller
knows it by the id it assigned.
"""

from __future__ import annotations

from longboat.client.admin import Admin
from longboat.client.errors import ClientError
from longboat.client.replication import controllers_of, log_ends, replication_lag
from longboat.dashboard.admin_json import Json
from longboat.protocol.bodies import ClusterInfo
from longboat.protocol.controller import ReplicasInfo
from longboat.protocol.types import MASTER_ID


async def replication_view(admin: Admin) -> Json:
    """`{"groups": [...], "controllers": [addr, ...], "controllerError": text | null}`; each
    group `{cluster, broker, members: [...], controller: ReplicasInfo's JSON | null}`."""
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
        group_json(info, cluster, name, ends, replicas.get(name))
        for cluster, names in sorted(info.cluster_addr_table.items())
        for name in sorted(names)
        if name in info.broker_addr_table
    ]
    return {"groups": groups, "controllers": controllers, "controllerError": controller_error}


def group_json(
    info: ClusterInfo,
    cluster: str,
    name: str,
    ends: dict[str, int | None],
    replicas: ReplicasInfo | None,
) -> Json:
    in_sync = {r.broker_address for r in replicas.in_sync_replicas} if replicas else set()
    members = [
        {
            "id": broker_id,
            "role": "master" if broker_id == MASTER_ID else "slave",
            "addr": addr,
            "logEnd": ends.get(addr),
            "behind": replication_lag(info, name, broker_id, ends),
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
