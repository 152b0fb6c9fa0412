"""What a broker module needs from the composition root, and nothing more.

Feature modules (retry, schedule, locks, lookups, admin) each expose
`install(host: FeatureHost) -> None`, which registers request handlers on `host.router`, store
arrival listeners, start/stop hooks and periodic jobs.  The core modules (send, pull, client
requests, offset requests, metrics) and transactions expose
`install(host: CoreHost) -> None`: `CoreHost` adds
the broker's own machinery — the send path's append and durability steps, the consumer table,
the hold service, connection-closed listeners.  `BrokerController` is the real host of both.

Every module is typed against these protocols rather than the controller class, so the
controller is the one module that imports the handler modules and the import graph has no
cycle through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from longboat.broker.config import BrokerConfig
from longboat.broker.consumers import ConsumerManager
from longboat.broker.delay_levels import DelayLevels
from longboat.broker.deliveries import Deliveries
from longboat.broker.hold import HoldService
from longboat.broker.producers import ProducerTable
from longboat.broker.subscription_groups import SubscriptionGroupTable
from longboat.broker.topics import TopicManager
from longboat.protocol.bodies import TopicConfig, TopicConfigSerializeWrapper
from longboat.remoting import Connection, Router
from longboat.store import (
    ConsumerOffsetTable,
    EncodedBatch,
    MessageInner,
    MessageStore,
    PutResult,
)
from longboat.store.message_store import ArrivalListener

if TYPE_CHECKING:
    from longboat.acl import AccessControl
    from longboat.broker.transaction_service import TransactionService


class TopicCreator(Protocol):
    def get(self, topic: str) -> TopicConfig | None: ...

    def wrapper(self) -> TopicConfigSerializeWrapper:
        """The topic table with its data version."""
        ...

    def ensure_retry_topic(self, group: str, queue_nums: int = 1) -> TopicConfig:
        """`%RETRY%<group>`, created (and registered) on first use."""
        ...

    def ensure_dlq_topic(self, group: str) -> TopicConfig:
        """`%DLQ%<group>`, created (and registered) on first use."""
        ...

    def create_topic(self, config: TopicConfig) -> None:
        """Create or replace a topic's config (the caller re-registers)."""
        ...

    def delete_topic(self, topic: str) -> bool:
        """Forget a topic's config (re-registers when there was one); False when none."""
        ...


class FeatureHost(Protocol):
    @property
    def config(self) -> BrokerConfig: ...
    @property
    def store(self) -> MessageStore: ...
    @property
    def router(self) -> Router: ...
    @property
    def topics(self) -> TopicCreator: ...
    @property
    def offsets(self) -> ConsumerOffsetTable: ...
    @property
    def subscription_groups(self) -> SubscriptionGroupTable: ...
    @property
    def delay_levels(self) -> DelayLevels: ...

    def put_message(self, msg: MessageInner) -> Awaitable[PutResult]:
        """Store as the send path does: DELAY → schedule topic, SYNC_FLUSH waited for."""
        ...

    def register_now(self) -> Awaitable[object]:
        """Register with the name servers at once (after a topic change)."""
        ...

    def add_start_hook(self, hook: Callable[[], object]) -> None:
        """Run `hook` (plain or async) on the loop once the store is open, before serving."""
        ...

    def add_stop_hook(self, hook: Callable[[], object]) -> None:
        """Run `hook` (plain or async) at shutdown, after held pulls are answered and while
        the store is still open."""
        ...

    def add_periodic(self, interval_s: float, job: Callable[[], object]) -> None:
        """Run `job` (plain or async) every `interval_s` seconds while the broker runs."""
        ...

    def add_master_hooks(self, start: Callable[[], object], stop: Callable[[], object]) -> None:
        """Controller mode: run `start` whenever this broker becomes master, `stop` when it
        stops being master or shuts down as master (plain or async)."""
        ...


class CoreHost(FeatureHost, Protocol):
    """What the broker's core modules use besides a feature's members."""

    @property
    def topics(self) -> TopicManager: ...
    @property
    def consumers(self) -> ConsumerManager: ...
    @property
    def hold(self) -> HoldService: ...
    @property
    def deliveries(self) -> Deliveries:
        """Hear what every pull answer delivers: `deliveries.add(listener)`."""
        ...

    @property
    def broker_addr(self) -> str:
        """`host:port` this broker is reached at (the port it bound, not the configured 0)."""
        ...

    @property
    def producers(self) -> ProducerTable: ...
    @property
    def access_control(self) -> AccessControl | None:
        """plain_acl.yml's rules when ACL is on, else None."""
        ...

    @property
    def transactions(self) -> TransactionService: ...
    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock (seconds) of the store."""
        ...

    @property
    def flush_backlog_full(self) -> bool:
        """Too many appends wait for an fsync: refuse sends that would wait too."""
        ...

    def store_message(self, msg: MessageInner) -> PutResult:
        """Append one message now, on the loop (DELAY rerouted); durability not awaited."""
        ...

    def store_encoded(self, batch: EncodedBatch) -> PutResult:
        """Append encoded messages (a batch, a plain single send) now, on the loop;
        durability not awaited."""
        ...

    def await_durable(self, result: PutResult) -> Awaitable[PutResult]:
        """Wait for a SYNC_FLUSH append's fsync (FLUSH_DISK_TIMEOUT when late) and, on a
        SYNC_MASTER, a slave's acknowledgement (FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE)."""
        ...

    @property
    def waits_for_slaves(self) -> bool:
        """A SYNC_MASTER: every waiting send awaits a slave's acknowledgement."""
        ...

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """Hear every append, in-line on the appending thread."""
        ...

    def add_connection_closed_listener(self, listener: Callable[[Connection], None]) -> None:
        """Forget per-connection state when a client's connection closes."""
        ...
