"""`longboat cluster`: the brokers the name servers know, their roles, topics and replication lag.

A slave's lag is its master's commit-log end minus its own, in bytes, both read from
GET_BROKER_RUNTIME_INFO's `commitLogMaxOffset` (a RocketMQ broker answers the same key), so the
command shows it for Apache RocketMQ groups too.  A master has no lag; a slave whose master
is gone, or a broker that does not answer, shows none."""

from __future__ import annotations

import asyncio

import click
from rich.table import Table

from longboat.cli.connect import admin_for, namesrv_option
from longboat.cli.render import format_option, print_json
from longboat.cli.runtime import console, run
from longboat.client import ClientError
from longboat.client.admin import Admin
from longboat.protocol.bodies import ClusterInfo
from longboat.protocol.topic_names import topic_kind
from longboat.protocol.types import MASTER_ID


@click.command()
@format_option
@namesrv_option
def cluster(output: str, namesrv: str) -> None:
    """Clusters, brokers (name, id, role, address) and how many user topics each serves."""

    async def go() -> tuple[ClusterInfo, dict[str, int | str], dict[str, int | None]]:
        async with admin_for(namesrv) as admin:
            info = await admin.cluster_info()
            addrs = sorted(
                {a for b in info.broker_addr_table.values() for a in b.broker_addrs.values()}
            )
            reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
            counts = await asyncio.gather(*(topic_count(admin, a, reserved) for a in addrs))
            ends = await asyncio.gather(*(log_end(admin, a) for a in addrs))
            return info, dict(zip(addrs, counts, strict=True)), dict(zip(addrs, ends, strict=True))

    info, topics, ends = run(go())
    lags = {
        addr: replication_lag(info, name, broker_id, ends)
        for _, name, broker_id, addr in info.members()
    }
    if output == "json":
        print_json(
            [
                {
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
                for cluster_name, name, broker_id, addr in info.members()
            ]
        )
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


def role_of(broker_id: int) -> str:
    return "master" if broker_id == MASTER_ID else "slave"


async def log_end(admin: Admin, addr: str) -> int | None:
    """The broker's commit-log end (runtime info's commitLogMaxOffset); None if unknown."""
    try:
        value = (await admin.broker_runtime(addr)).get("commitLogMaxOffset", "")
    except ClientError:
        return None
    return int(value) if value.isdigit() else None


def replication_lag(
    info: ClusterInfo, name: str, broker_id: int, ends: dict[str, int | None]
) -> int | None:
    """A slave's bytes behind its master; None for a master or when either end is unknown."""
    addrs = info.broker_addr_table[name].broker_addrs
    master = addrs.get(MASTER_ID)
    if broker_id == MASTER_ID or master is None:
        return None
    master_end, own_end = ends.get(master), ends.get(addrs[broker_id])
    if master_end is None or own_end is None:
        return None
    return max(0, master_end - own_end)


async def topic_count(admin: Admin, addr: str, reserved: set[str]) -> int | str:
    """User topics on the broker at `addr`; why not, when it cannot be asked."""
    try:
        configs = await admin.broker_topics(addr)
    except ClientError as exc:
        return f"unreachable ({type(exc).__name__})"
    return sum(1 for t in configs if topic_kind(t, reserved) == "normal")


COMMANDS = (cluster,)
