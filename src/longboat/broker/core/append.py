"""The append and its durability, for every protocol: what a send does once admitted.

`store_message` / `store_encoded` append now, on the event loop, so messages are stored in
the order they arrived; a DELAY property reroutes a message to its schedule-topic queue first.
`await_durable` then waits, when it must, for the fsync (SYNC_FLUSH, bounded by
syncFlushTimeout) and, on a SYNC_MASTER, for a slave's acknowledgement, as RocketMQ's
handleHA; in controller mode, on a master, for the SyncStateSet (allAckInSyncStateSet).
Controller mode switches the role while the broker runs: `role_changed` tells the appender,
so a slave refuses sends and a master waits for its replicas.  `outcome` turns the store's
put status into the core's terms (the table below): a message that was stored is answered
with its ids, whatever its durability; one that was not is a `Refusal`.

| put status                         | outcome                                   |
|------------------------------------|-------------------------------------------|
| PUT_OK                             | stored                                    |
| FLUSH_DISK_TIMEOUT                 | stored, Reason.FLUSH_DISK_TIMEOUT         |
| FLUSH_SLAVE_TIMEOUT                | stored, Reason.FLUSH_SLAVE_TIMEOUT        |
| SLAVE_NOT_AVAILABLE                | stored, Reason.SLAVE_NOT_AVAILABLE        |
| MESSAGE_ILLEGAL                    | refused, Reason.ILLEGAL_MESSAGE           |
| PROPERTIES_SIZE_EXCEEDED           | refused, Reason.PROPERTIES_TOO_LARGE      |
| SERVICE_NOT_AVAILABLE (a slave)    | refused, Reason.UNAVAILABLE               |
| OS_PAGECACHE_BUSY                  | refused, Reason.BUSY                      |
| UNKNOWN_ERROR                      | refused, Reason.STORE_ERROR               |

Back-pressure: too many appends waiting for an fsync (`maxPendingSyncFlushes`) means the disk
is behind; `admit_waiting` refuses a send that would wait too (Reason.BUSY) before it is
appended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from longboat.broker.config import BrokerConfig
from longboat.broker.core.refusal import STORED_LATE, Reason, Refusal
from longboat.broker.core.timers import reroute_timer
from longboat.broker.delay_levels import DelayLevels, reroute_delayed
from longboat.store import EncodedBatch, MessageInner, MessageStore, PutResult, PutStatus

PUT_OUTCOMES: dict[PutStatus, Reason | None] = {
    PutStatus.PUT_OK: None,
    PutStatus.FLUSH_DISK_TIMEOUT: Reason.FLUSH_DISK_TIMEOUT,
    PutStatus.FLUSH_SLAVE_TIMEOUT: Reason.FLUSH_SLAVE_TIMEOUT,
    PutStatus.SLAVE_NOT_AVAILABLE: Reason.SLAVE_NOT_AVAILABLE,
    PutStatus.MESSAGE_ILLEGAL: Reason.ILLEGAL_MESSAGE,
    PutStatus.PROPERTIES_SIZE_EXCEEDED: Reason.PROPERTIES_TOO_LARGE,
    PutStatus.SERVICE_NOT_AVAILABLE: Reason.UNAVAILABLE,
    PutStatus.OS_PAGECACHE_BUSY: Reason.BUSY,
    PutStatus.UNKNOWN_ERROR: Reason.STORE_ERROR,
}
# The remark of a stored-but-late answer.
LATE_REMARKS: dict[Reason, str] = {
    Reason.FLUSH_DISK_TIMEOUT: "flush to disk timed out",
    Reason.FLUSH_SLAVE_TIMEOUT: "stored, but no slave acknowledged it in syncFlushTimeout",
    Reason.SLAVE_NOT_AVAILABLE: "stored, but no slave is connected or one is far behind",
}
BUSY_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
# RocketMQ's remark for SERVICE_NOT_AVAILABLE (its clients retry another broker on the code);
# the store's reason follows it.
SERVICE_NOT_AVAILABLE_REMARK = (
    "service not available now. It may be caused by one of the following reasons: the "
    "broker's disk is full, messages are put to the slave, message store has been shut down, etc."
)
# What a slave answers every write: its store follows the master's log and takes no other.
_SLAVE_REFUSAL = PutResult(
    PutStatus.SERVICE_NOT_AVAILABLE,
    error="this broker is a slave (brokerRole=SLAVE): send to the master of its broker group",
)


def outcome(result: PutResult) -> Reason | None:
    """The put status in the core's terms: None when stored and durable as asked, a reason of
    STORED_LATE when stored but not yet known durable; raises `Refusal` when nothing was
    stored (the remark names the store's status and error)."""
    status = result.status
    if status is PutStatus.PUT_OK:  # every stored send: no hash of an Enum (a Python call)
        return None
    reason = PUT_OUTCOMES[status]
    if reason is None or reason in STORED_LATE:
        return reason
    if reason is Reason.UNAVAILABLE:
        raise Refusal(reason, f"{SERVICE_NOT_AVAILABLE_REMARK} ({result.error})")
    raise Refusal(reason, f"{result.status.value}: {result.error or ''}")


class Replication(Protocol):
    """A master's HA server, as the append waits on it (SYNC_MASTER, controller mode)."""

    def slave_ok(self, offset: int) -> bool: ...

    async def wait_replicated(
        self, offset: int, timeout: float, *, ids: frozenset[int] | None = None
    ) -> bool: ...


# Controller mode: whom a send waits for, asked at each send (the SyncStateSet changes); None
# for any one slave.
InSync = Callable[[], frozenset[int] | None]


class Appender:
    """Appends for every protocol; one per broker, built once the store is open."""

    def __init__(
        self,
        config: BrokerConfig,
        store: MessageStore,
        delay_levels: DelayLevels,
        clock: Callable[[], float],
        replication: Replication | None,
    ) -> None:
        """`replication` is the master's HA server when it waits for slaves (SYNC_MASTER),
        else None."""
        self.config = config
        self.store = store
        self.delay_levels = delay_levels
        self.clock = clock
        self.replication = replication
        self.in_sync: InSync | None = None
        self._pending_durable = 0

    def role_changed(
        self, config: BrokerConfig, replication: Replication | None, in_sync: InSync | None
    ) -> None:
        """Controller mode switched the role: `config` is the broker's new one (a slave's
        refuses every send), `replication` the master's HA server when sends wait for
        replicas, else None; `in_sync` names whom each send waits for (the SyncStateSet's
        other members under allAckInSyncStateSet, None for any one slave).  A master's send
        then waits without SYNC_MASTER's early SLAVE_NOT_AVAILABLE, as RocketMQ's
        AutoSwitchHAService."""
        self.config = config
        self.replication = replication
        self.in_sync = in_sync

    def store_message(self, msg: MessageInner) -> PutResult:
        """Append one message now (on the loop, so appends keep arrival order); a DELAY
        property reroutes it to its schedule-topic queue first, a timer property to the timer
        queue (Refusal when its time is too far).  Durability under SYNC_FLUSH
        is awaited separately (`await_durable`)."""
        if self.config.is_slave:
            return _SLAVE_REFUSAL
        now_ms = int(self.clock() * 1000)
        cfg = self.config
        # A timer (RIP-43) first: it yields to a delay level, whose message loses its timer.
        reroute_timer(
            msg, now_ms, cfg.timer_precision_ms, cfg.timer_max_delay_sec, cfg.timer_wheel_enable
        )
        reroute_delayed(msg, self.delay_levels, now_ms)
        return self.store.put_message(msg)

    def store_encoded(self, batch: EncodedBatch) -> PutResult:
        """Append messages that keep their encoded properties: a batch (one topic and queue;
        batches may not be delayed) or a plain single send."""
        if self.config.is_slave:
            return _SLAVE_REFUSAL
        return self.store.put_encoded_batch(batch)

    @property
    def flush_backlog_full(self) -> bool:
        """Too many appends are waiting for an fsync: the disk is behind, refuse more."""
        return self._pending_durable >= self.config.max_pending_sync_flushes

    def admit_waiting(self) -> None:
        """Refuse (Reason.BUSY) a send that would wait for an fsync while the disk is behind."""
        if self.flush_backlog_full:
            raise Refusal(Reason.BUSY, BUSY_REMARK)

    @property
    def waits_for_slaves(self) -> bool:
        """A SYNC_MASTER, or a master in controller mode with allAckInSyncStateSet or
        inSyncReplicas > 1: every waiting send awaits its replicas' acknowledgement."""
        return self.replication is not None

    def must_wait(self, result: PutResult) -> bool:
        """`await_durable` has something to wait for (an fsync, a slave)."""
        return result.durable is not None or self.replication is not None

    async def await_durable(self, result: PutResult) -> PutResult:
        """Wait for the fsync of a SYNC_FLUSH append (bounded by syncFlushTimeout); a late
        one turns into FLUSH_DISK_TIMEOUT (stored, but not yet known durable).  Then, on a
        SYNC_MASTER, for a slave to acknowledge it, as RocketMQ's handleHA: no slave fit to
        wait for answers SLAVE_NOT_AVAILABLE at once, one late FLUSH_SLAVE_TIMEOUT.  In
        controller mode, for the replicas `in_sync` names (late: FLUSH_SLAVE_TIMEOUT)."""
        if result.status is not PutStatus.PUT_OK:
            return result
        timeout = self.config.sync_flush_timeout / 1000
        if result.durable is not None:
            self._pending_durable += 1
            try:
                await asyncio.wait_for(asyncio.wrap_future(result.durable), timeout)
            except TimeoutError:
                result.status = PutStatus.FLUSH_DISK_TIMEOUT
                return result
            finally:
                self._pending_durable -= 1
        replication = self.replication
        if replication is not None and result.appended is not None:
            end = result.appended.end
            if self.in_sync is not None:
                ids = self.in_sync()
                if not await replication.wait_replicated(end, timeout, ids=ids):
                    result.status = PutStatus.FLUSH_SLAVE_TIMEOUT
            elif not replication.slave_ok(end):
                result.status = PutStatus.SLAVE_NOT_AVAILABLE
            elif not await replication.wait_replicated(end, timeout):
                result.status = PutStatus.FLUSH_SLAVE_TIMEOUT
        return result

    async def put_message(self, msg: MessageInner) -> PutResult:
        """Store one message the way the send path does, durability included."""
        return await self.await_durable(self.store_message(msg))
