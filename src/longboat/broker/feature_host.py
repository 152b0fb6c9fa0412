"""What a broker module needs from the composition root, and nothing more.

Feature modules (send-back, delay schedule, locks, lookups, topic admin) each expose
`install(host: FeatureHost) -> None`, which registers request handlers on `host.router`, store
arrival listeners, start/stop hooks and periodic jobs.  The broker's own request handling
(send, pull, client requests, offset requests, transactions, gRPC) and metrics take the wider
`CoreHost` (`core_host.py`), which adds the core's machinery.  `BrokerController` is the real
host of both.

Every module is typed against these protocols rather than the controller class, so the
controller is the one module that imports the handler modules and the import graph has no
cycle through it.  This protocol names nothing of the core, so the core may use it (pop
consumption and the retry policy do).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from longboat.broker.config import BrokerConfig
from longboat.broker.delay_levels import DelayLevels
from longboat.broker.state.subscription_groups import SubscriptionGroupTable
from longboat.protocol.bodies import TopicConfig, TopicConfigSerializeWrapper
from longboat.remoting import Router
from longboat.store import ConsumerOffsetTable, MessageInner, MessageStore, PutResult


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
        """Register the whole table with the name servers at once."""
        ...

    def registered(self) -> Awaitable[None]:
        """Wait until the topic changes made so far are registered with the name servers."""
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
