"""What a broker feature module needs from the composition root, and nothing more.

Feature modules (retry, schedule, locks, lookups, admin) each expose
`install(host: FeatureHost) -> None`, which registers request handlers on `host.router`, store
arrival listeners, start/stop hooks and periodic jobs.  `BrokerController` is the real host.
They are typed against this protocol rather than the controller class, so the controller stays
the one place that knows every module, and tests can install a feature on any object that
offers these members.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from longboat.broker.config import BrokerConfig
from longboat.broker.delay_levels import DelayLevels
from longboat.broker.subscription_groups import SubscriptionGroupTable
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
