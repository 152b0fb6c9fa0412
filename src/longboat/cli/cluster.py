"""`longboat cluster`: the brokers the name servers know, their roles, topics and replication lag.

A slave's lag is its master's commit-log end minus its own, in bytes
(`longboat.client.replication`: a RocketMQ broker answers the same figures), so the command
shows it for Apache RocketMQ groups too.  A master has no lag; a slave whose master is gone,
or a broker that does not answer, shows none.

The same lag in seconds is read as the dashboard's Replication page reads it, from a history
of each master's commit-log end (`dashboard.sampler.LagSampler.sample_masters`, read by
`dashboard.replication.seconds_json`); brokers keep no such history, so the command samples
the masters itself for `--lag-window` seconds first (only when a group has a slave), and a
slave further behind shows as at least that long.

With `--controller` (controller mode), a second table: each group's master, master epoch and
SyncStateSet as the leading controller keeps them (CONTROLLER_GET_SYNC_STATE_DATA)."""

from __future__ import annotations

import asyncio
import time

import click
from rich.table import Table

from longboat.cli.connect import admin_for, namesrv_option
from longboat.cli.options import bounded_option
from longboat.cli.render import format_duration, format_option, print_json
from longboat.cli.runtime import console, run
from longboat.client import ClientError
from longboat.client.admin import Admin
from longboat.client.replication import log_ends, replication_lag
from longboat.dashboard.admin_json import Json
from longboat.dashboard.replication import Lag, seconds_json
from longboat.dashboard.sampler import LagSampler
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
@bounded_option(
    "--lag-window",
    default=1.0,
    low=0.0,
    high=300.0,
    help="Seconds over which each master's commit-log end is sampled, for a slave's lag in "
    "seconds (only when a group has a slave); a slave further behind shows as at least this.",
)
def cluster(output: str, namesrv: str, controllers: str, lag_window: float) -> None:
    """Clusters, brokers (name, id, role, address), how many user topics each serves and how
    far each slave is behind its master."""
    controller_addrs = [a.strip() for a in controllers.split(";") if a.strip()]
    replicas: list[BrokerReplicasInfo] = []

    async def go() -> tuple[ClusterInfo, dict[str, int | str], dict[str, int | None], Lag]:
        async with admin_for(namesrv) as admin:
            info = await admin.cluster_info()
            sampler = LagSampler(admin, replication_window=lag_window + 60.0)
            if any(broker_id != MASTER_ID for _, _, broker_id, _ in info.members()):
                await sample_masters(sampler, lag_window)
            if controller_addrs:
                names = sorted(info.broker_addr_table)
                replicas.append(await admin.sync_state_data(controller_addrs, names))
            addrs = sorted(
                {a for b in info.broker_addr_table.values() for a in b.broker_addrs.values()}
            )
            reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
            counts = await asyncio.gather(*(topic_count(admin, a, reserved) for a in addrs))
            ends = await log_ends(admin, addrs)
            history = Lag(sampler.log_end_histories(), sampler.clock())
            return info, dict(zip(addrs, counts, strict=True)), ends, history

    info, topics, ends, history = run(go())
    lags = {
        addr: replication_lag(info, name, broker_id, ends)
        for _, name, broker_id, addr in info.members()
    }
    seconds = {
        addr: seconds_json(info, name, broker_id, ends, history)
        for _, name, broker_id, addr in info.members()
    }
    groups = replicas[0].replicas_info_table if replicas else {}
    if output == "json":
        if controller_addrs:
            print_json(
                {
                    "brokers": [member_json(m, topics, lags, seconds) for m in info.members()],
                    "groups": {name: g.to_dict() for name, g in sorted(groups.items())},
                }
            )
            return
        print_json([member_json(m, topics, lags, seconds) for m in info.members()])
        return
    if not info.broker_addr_table:
        console.print("no broker is registered with the name server")
        return
    table = Table(
        "cluster", "broker", "id", "role", "address", "topics", "lag (bytes)", "lag (time)"
    )
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
            seconds_text(seconds[addr]),
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


async def sample_masters(sampler: LagSampler, window: float, every: float = 0.2) -> None:
    """Sample each master's commit-log end every `every` seconds for `window` seconds (once
    when it is 0): the history a slave's lag in seconds is read from."""
    deadline = time.monotonic() + window
    while True:
        await sampler.sample_masters()
        left = deadline - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(every, left))


def seconds_text(seconds: Json) -> str:
    """A slave's lag in seconds as the table shows it: `-` when unknown or for a master."""
    if seconds["behindSeconds"] is None:
        return "-"
    at_least = "≥ " if seconds["behindSecondsAtLeast"] else ""
    return at_least + format_duration(seconds["behindSeconds"])


def member_json(
    member: tuple[str, str, int, str],
    topics: dict[str, int | str],
    lags: dict[str, int | None],
    seconds: dict[str, Json],
) -> dict[str, object]:
    cluster_name, name, broker_id, addr = member
    return {
        "cluster": cluster_name,
        "broker": name,
        "id": broker_id,
        "role": role_of(broker_id),
        "addr": addr,
        "lag": lags[addr],
        **seconds[addr],
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
