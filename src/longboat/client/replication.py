"""How a broker group replicates, as an admin reads it from the brokers and the controllers.

Two sources, both readable on Apache RocketMQ brokers too:

* A slave's lag is its master's commit-log end minus its own, in bytes, both read from
  GET_BROKER_RUNTIME_INFO's `commitLogMaxOffset`.  A master has no lag; a slave whose master
  is gone, or a broker that does not answer, has none known.
* In controller mode (RocketMQ 5, RIP-44) the controllers keep each group's master, master
  epoch and SyncStateSet.  A broker's own settings (GET_BROKER_CONFIG's
  `enableControllerMode` and `controllerAddr`) name its controllers, so nothing beyond the
  name server's address is needed to find them.

`longboat cluster` and the dashboard's Replication page both read through here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

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
