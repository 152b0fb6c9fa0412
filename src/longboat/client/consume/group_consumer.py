"""`GroupConsumer`: what the push and the lite pull consumer share when they are made.

Both take a consumer group, checked here once (a bad name is the caller's mistake, raised
before anything starts), and a settings object whose fields keyword arguments may replace;
both run a pull loop per owned queue with the same `PullSettings`, derived once here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from longboat.client.config import ClientConfig
from longboat.client.consume.pull_loop import Subscription
from longboat.client.consumer_settings import ConsumerSettings, settings_with
from longboat.client.errors import ClientUsageError
from longboat.client.lifecycle import InstanceUser
from longboat.protocol.topic_names import validate_consumer_group

S = TypeVar("S", bound=ConsumerSettings)


class GroupConsumer(InstanceUser, Generic[S]):
    """A consumer of one group: its name, its settings and its subscriptions by topic."""

    def __init__(
        self,
        group: str,
        settings: S,
        options: Mapping[str, Any],
        config: ClientConfig | None,
        namesrv_addrs: str | list[str] | None,
    ) -> None:
        """`settings` with `options` (field names) replacing its fields; raises
        ClientUsageError for a bad group name or setting."""
        super().__init__(config, namesrv_addrs)
        if problem := validate_consumer_group(group):
            raise ClientUsageError(f"invalid consumer group: {problem}")
        self.group = group
        self.settings: S = settings_with(settings, dict(options))
        self.pull_settings = self.settings.pull_settings()
        self._subscriptions: dict[str, Subscription] = {}
