"""`longboat cluster`: the brokers the name servers know, their roles, topics and replication lag.

A slave's lag is its master's commit-log end minus its own, in bytes
(`longboat.client.replication`: a RocketMQ broker answers the same figures), so the command
shows it for Apache RocketMQ groups too.  A master has no lag; a slave whose master is gone,
or a broker that does not answer, shows none.

With `--controller` (controller mode), a second table: each group's master, master epoch and
SyncStateSet as the leading controller keeps them (CONTROLLER_GET_SYNC_STATE_DATA)."""

from __future__ import annotations

import asyncio

import click
from rich.table import Table

from longboat.cli.connect import admin_for, namesrv_option
from longboat.cli.render import format_option, print_json
from longboat.cli.runtime import console, run
from longboat.client import ClientError
from longboat.client.admin import Admin
from longboat.client.replication import log_ends, replication_lag
from longboat.protocol.bodies import ClusterInfo
from longboat.protocol.controller import BrokerReplicasInfo, ReplicaIdentity, ReplicasInfo
from longboat.protocol.topic_names import topic_kind
from longboat.protocol.types import MASTER_ID


@click.command()
@format_option
@namesrv_option
@click.option(
    "--controller",
    "controllers",
    default="",
    help="Controllers (host:port, `;`-separated): also show each group's master, epoch and "
    "SyncStateSet (controller mode).",
)
def cluster(output: str, namesrv: str, controllers: str) -> None:
    """Clusters, brokers (name, id, role, address) and how many user topics each serves."""
    controller_addrs = [a.strip() for a in controllers.split(";") if a.strip()]
    replicas: list[BrokerReplicasInfo] = []

    async def go() -> tuple[ClusterInfo, dict[str, int | str], dict[str, int | None]]:
        async with admin_for(namesrv) as admin:
            info = await admin.cluster_info()
            if controller_addrs:
                names = sorted(info.broker_addr_table)
                replicas.append(await admin.sync_state_data(controller_addrs, names))
            addrs = sorted(
                {a for b in info.broker_addr_table.values() for a in b.broker_addrs.values()}
            )
            reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
            counts = await asyncio.gather(*(topic_count(admin, a, reserved) for a in addrs))
            return info, dict(zip(addrs, counts, strict=True)), await log_ends(admin, addrs)

    info, topics, ends = run(go())
    lags = {
        addr: replication_lag(info, name, broker_id, ends)
        for _, name, broker_id, addr in info.members()
    }
    groups = replicas[0].replicas_info_table if replicas else {}
    if output == "json":
        if controller_addrs:
            print_json(
                {
                    "brokers": [member_json(info, m, topics, lags) for m in info.members()],
                    "groups": {name: g.to_dict() for name, g in sorted(groups.items())},
                }
            )
            return
        print_json([member_json(info, m, topics, lags) for m in info.members()])
        return
    if not info.broker_addr_table:
        console.print("no broker is registered with the name server")
        return
    table = Table("cluster", "broker", "id", "role", "address", "topics", "lag (bytes)")
    for cluster_name, name, broker_id, addr in info.members():
        lag = lags[addr]
        table.add_row(
            cluster_name,
            name,
            str(broker_id),
            role_of(broker_id),
            addr,
            str(topics[addr]),
            "-" if lag is None else f"{lag:,}",
        )
    console.print(table)
    if controller_addrs:
        console.print(replicas_table(groups))


def replicas_table(groups: dict[str, ReplicasInfo]) -> Table:
    table = Table("broker", "master", "master epoch", "SyncStateSet", "set epoch", "not in sync")
    for name, group in sorted(groups.items()):
        table.add_row(
            name,
            f"{group.master_broker_id} {group.master_address}"
            if group.master_broker_id is not None
            else "none",
            str(group.master_epoch),
            ", ".join(_replica(r) for r in group.in_sync_replicas),
            str(group.sync_state_set_epoch),
            ", ".join(_replica(r) for r in group.not_in_sync_replicas) or "-",
        )
    return table


def _replica(r: ReplicaIdentity) -> str:
    return f"{r.broker_id}" + ("" if r.alive else " (down)")


def member_json(
    info: ClusterInfo,
    member: tuple[str, str, int, str],
    topics: dict[str, int | str],
    lags: dict[str, int | None],
) -> dict[str, object]:
    cluster_name, name, broker_id, addr = member
    return {
        "cluster": cluster_name,
        "broker": name,
        "id": broker_id,
        "role": role_of(broker_id),
        "addr": addr,
        "lag": lags[addr],
        **(
            {"topics": topics[addr]}
            if isinstance(topics[addr], int)
            else {"topics": None, "error": topics[addr]}
        ),
    }


def role_of(broker_id: int) -> str:
    return "master" if broker_id == MASTER_ID else "slave"


async def topic_count(admin: Admin, addr: str, reserved: set[str]) -> int | str:
    """User topics on the broker at `addr`; why not, when it cannot be asked."""
    try:
        configs = await admin.broker_topics(addr)
    except ClientError as exc:
        return f"unreachable ({type(exc).__name__})"
    return sum(1 for t in configs if topic_kind(t, reserved) == "normal")


COMMANDS = (cluster,)
