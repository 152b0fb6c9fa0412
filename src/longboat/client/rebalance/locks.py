"""Broker queue locks (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ) of a consumer group.

A member that takes a queue's lock before reading its committed offset, and an old owner
that commits before it unlocks, hand the queue over in order: the new owner cannot read an
offset the old one is still to move.  The broker lets a lock lapse 60 s after its last
renewal (so a crashed member's queues move on), hence the renewal every RENEW_INTERVAL_S.
"""

from __future__ import annotations

import logging

from longboat.client._internal.instance import ClientInstance
from longboat.client.errors import ClientError
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

# Owned queues are locked again this often (Java: 20 s; the broker keeps a lock 60 s).
RENEW_INTERVAL_S = 20.0
# A queue whose lock another member still holds is asked for again this often.
RETRY_S = 1.0


def _by_broker(mqs: list[MessageQueue]) -> dict[str, list[MessageQueue]]:
    by_broker: dict[str, list[MessageQueue]] = {}
    for mq in mqs:
        by_broker.setdefault(mq.broker_name, []).append(mq)
    return by_broker


async def lock_queues(
    instance: ClientInstance, group: str, mqs: list[MessageQueue]
) -> set[MessageQueue]:
    """Lock (or renew) `mqs` for this client, one request per broker; the queues it now
    holds (none of a broker that could not be asked)."""
    granted: set[MessageQueue] = set()
    for broker, queues in _by_broker(mqs).items():
        try:
            addr = await instance.find_master_addr(broker, queues[0].topic)
            got = await instance.api.lock_batch(addr, group, instance.client_id, queues)
        except ClientError as exc:
            log.info("locking %d queue(s) on %s failed: %s", len(queues), broker, exc)
            continue
        granted.update(got)
    return granted


async def unlock_queues(instance: ClientInstance, group: str, mqs: list[MessageQueue]) -> None:
    """Give the locks of `mqs` back (after their offsets were committed); a lock that
    cannot be given back lapses on its own."""
    for broker, queues in _by_broker(mqs).items():
        try:
            addr = await instance.find_master_addr(broker, queues[0].topic)
            await instance.api.unlock_batch(addr, group, instance.client_id, queues)
        except ClientError as exc:
            log.warning(
                "unlocking %d queue(s) of %s on %s failed (they lapse on their own): %s",
                len(queues),
                group,
                broker,
                exc,
            )
