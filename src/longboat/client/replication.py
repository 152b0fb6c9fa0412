"""How a broker group replicates, as an admin reads it from the brokers and the controllers.

Two sources, both readable on Apache RocketMQ brokers too:

* A slave's lag is its master's commit-log end minus its own, in bytes, both read from
  GET_BROKER_RUNTIME_INFO's `commitLogMaxOffset`.  A master has no lag; a slave whose master
  is gone, or a broker that does not answer, has none known.
* The same lag in seconds needs history, which brokers do not keep: whoever samples a master's
  commit-log end over time can say how long ago the master held no more than a slave holds
  now (`seconds_behind`).
* In controller mode (RocketMQ 5, RIP-44) the controllers keep each group's master, master
  epoch and SyncStateSet.  A broker's own settings (GET_BROKER_CONFIG's
  `enableControllerMode` and `controllerAddr`) name its controllers, so nothing beyond the
  name server's address is needed to find them.

`longboat cluster` and the dashboard's Replication page both read through here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from longboat.client.admin import Admin
from longboat.client.errors import ClientError
from longboat.protocol.bodies import ClusterInfo
from longboat.protocol.types import MASTER_ID


async def log_end(admin: Admin, addr: str) -> int | None:
    """The broker's commit-log end (runtime info's commitLogMaxOffset); None if unknown."""
    try:
        value = (await admin.broker_runtime(addr)).get("commitLogMaxOffset", "")
    except ClientError:
        return None
    return int(value) if value.isdigit() else None


async def log_ends(admin: Admin, addrs: Iterable[str]) -> dict[str, int | None]:
    """`log_end` of each broker, asked all at once."""
    ordered = sorted(set(addrs))
    ends = await asyncio.gather(*(log_end(admin, a) for a in ordered))
    return dict(zip(ordered, ends, strict=True))


class SlaveEnds(NamedTuple):
    """A slave's master (its address and commit-log end) and the slave's own commit-log end."""

    master: str
    master_end: int
    own_end: int


def slave_ends(
    info: ClusterInfo, name: str, broker_id: int, ends: dict[str, int | None]
) -> SlaveEnds | None:
    """The ends a slave's lag is measured by; None for a master or when either end is unknown."""
    addrs = info.broker_addr_table[name].broker_addrs
    master = addrs.get(MASTER_ID)
    if broker_id == MASTER_ID or master is None:
        return None
    master_end, own_end = ends.get(master), ends.get(addrs[broker_id])
    if master_end is None or own_end is None:
        return None
    return SlaveEnds(master, master_end, own_end)


def replication_lag(
    info: ClusterInfo, name: str, broker_id: int, ends: dict[str, int | None]
) -> int | None:
    """A slave's bytes behind its master; None for a master or when either end is unknown."""
    known = slave_ends(info, name, broker_id, ends)
    return None if known is None else max(0, known.master_end - known.own_end)


@dataclass(frozen=True, slots=True)
class SecondsBehind:
    """How long ago the master held no more than the slave holds now.  With `at_least`, the
    slave holds less than the master did at the oldest sample, so the lag is `seconds` or
    more."""

    seconds: float
    at_least: bool = False


def seconds_behind(
    history: Sequence[tuple[float, int]], master_end: int, own_end: int, now: float
) -> SecondsBehind | None:
    """The lag of a slave at `own_end` whose master is at `master_end` now, given the master's
    sampled (time, commit-log end), oldest first: 0 when the slave holds all the master holds;
    at least the age of the oldest sample when it holds less than the master did then; None
    when it is behind and nothing was sampled.

    A slave's commit-log end is often mid-message (it copies bytes, not messages), so no
    message's store time says how old its copy is.  Its offset, compared with the master's
    past ends, does: if the master's end was at most the slave's at time T, the slave holds
    everything the master held at T, and its lag is `now - T` for the latest such sample.
    This is Kafka's "time since the replica last caught up" (`replica.lag.time.max.ms`),
    measured from outside the brokers.  It errs long by up to one sampling interval: the slave
    may also hold some of what the master wrote after T.
    """
    if own_end >= master_end:
        return SecondsBehind(0.0)
    for at, end in reversed(history):
        if end <= own_end:
            return SecondsBehind(max(0.0, now - at))
    if not history:
        return None
    return SecondsBehind(max(0.0, now - history[0][0]), at_least=True)


async def controllers_of(admin: Admin, addrs: Iterable[str]) -> list[str]:
    """The controllers that brokers in controller mode name in their settings, sorted; none
    when no broker runs in controller mode (or none of them answers)."""

    async def named(addr: str) -> list[str]:
        try:
            settings = await admin.broker_config(addr)
        except ClientError:
            return []
        if settings.get("enableControllerMode", "").lower() != "true":
            return []
        return [a.strip() for a in settings.get("controllerAddr", "").split(";") if a.strip()]

    found = await asyncio.gather(*(named(a) for a in sorted(set(addrs))))
    return sorted({a for addrs_named in found for a in addrs_named})
