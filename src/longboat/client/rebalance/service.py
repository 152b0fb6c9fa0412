"""The rebalance service: keeps a consumer's set of owned queues equal to its share.

Triggers: `start()` (once, before returning), `request()` (NOTIFY_CONSUMER_IDS_CHANGED, a route
change, a subscription change) and a timer every `interval` seconds with ±10 % jitter, so the
members of a big group do not ask the broker in lock step.  Triggers that arrive while a
rebalance runs collapse into one more run after it.

Invariants:

* rebalances run one at a time (a single task runs them), so two never race to start or
  stop the same queue — the cause of duplicate pull loops in RocketMQ's C++ client (#479);
* a queue is released only after `target.drop_queues` finished the drop handshake (pulls
  stopped, running listeners done, offset committed, lock released), and new queues are added
  after the drops, so a queue moving between two members of one process is never pulled twice;
* when the group's member list or a route cannot be read (or our own heartbeat has not reached
  the broker yet, so we are not in the list), the queues of that topic are kept as they are:
  an incomplete view must not drop queues nobody else will take.

Share per topic: broadcasting → every readable queue; clustering → `allocate(group, client_id,
sorted queues, sorted member ids)`, which every member computes alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Protocol

from longboat.client._internal.instance import ClientInstance
from longboat.client._internal.route import TopicRoute
from longboat.client.errors import ClientError
from longboat.client.tasks import BackgroundTask
from longboat.protocol.allocate import AllocateStrategy
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

JITTER = 0.1
# Retry delay when the broker does not list us yet (our heartbeat is on its way).
HEARTBEAT_WAIT = 1.0


class RebalanceTarget(Protocol):
    """The consumer side of a rebalance."""

    def topics(self) -> list[str]:
        """Topics to own queues of (subscriptions, plus the group's retry topic)."""
        ...

    def owned(self) -> set[MessageQueue]: ...

    async def drop_queues(self, mqs: list[MessageQueue]) -> None:
        """Stop consuming these queues; return once the handshake is complete."""
        ...

    async def add_queues(self, mqs: list[MessageQueue]) -> None:
        """Start consuming these queues (from their stored offset or consume_from)."""
        ...


@dataclass(eq=False, slots=True)
class RebalanceService:
    """Moves `target` to its share of its topics' queues, one run at a time (see above)."""

    instance: ClientInstance
    group: str
    target: RebalanceTarget
    allocate: AllocateStrategy
    _: KW_ONLY
    broadcasting: bool
    interval: float = 20.0
    _wanted: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _task: BackgroundTask = field(default_factory=BackgroundTask, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    # Observability: completed runs, and queues moved in and out.
    runs: int = field(default=0, init=False)
    added: int = field(default=0, init=False)
    dropped: int = field(default=0, init=False)

    async def start(self) -> None:
        await self.rebalance()
        self._task.start(self._loop(), f"rebalance {self.group}")

    async def stop(self) -> None:
        # Under the lock: a rebalance in progress finishes its handshakes first, and the
        # task is cancelled only while it waits, never halfway through dropping a queue.
        async with self._lock:
            await self._task.stop()

    def request(self) -> None:
        """Rebalance soon (never blocks; callable from request handlers)."""
        self._wanted.set()

    def on_route_changed(self, topic: str, route: TopicRoute) -> None:
        if topic in self.target.topics():
            self.request()

    async def _loop(self) -> None:
        while True:
            delay = self.interval * random.uniform(1 - JITTER, 1 + JITTER)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wanted.wait()
            self._wanted.clear()
            try:
                await self.rebalance()
            except ClientError as exc:
                log.warning("rebalance of %s failed: %s", self.group, exc)

    async def rebalance(self) -> None:
        """Compute this member's share of every topic and move to it."""
        async with self._lock:
            owned = self.target.owned()
            wanted: set[MessageQueue] = set()
            for topic in self.target.topics():
                current = {mq for mq in owned if mq.topic == topic}
                mine = await self._share_of(topic)
                wanted |= current if mine is None else mine
            dropped = sorted(owned - wanted)
            added = sorted(wanted - owned)
            if dropped:
                await self.target.drop_queues(dropped)
            if added:
                await self.target.add_queues(added)
            self.runs += 1
            self.added += len(added)
            self.dropped += len(dropped)
            if dropped or added:
                log.info(
                    "rebalance of %s on %s: +%d -%d, owns %d queue(s)",
                    self.group,
                    self.instance.client_id,
                    len(added),
                    len(dropped),
                    len(wanted),
                )

    async def restart_queues(
        self,
        mqs: list[MessageQueue],
        between: Callable[[list[MessageQueue]], Awaitable[None]],
    ) -> None:
        """Drop those of `mqs` still owned, run `between` on them, and add them again, under
        the rebalance lock: a broker-driven offset reset restarts queues this way, never
        racing a rebalance that moves them."""
        async with self._lock:
            owned = self.target.owned()
            mine = [mq for mq in mqs if mq in owned]
            if not mine:
                return
            await self.target.drop_queues(mine)
            await between(mine)
            await self.target.add_queues(mine)

    async def _share_of(self, topic: str) -> set[MessageQueue] | None:
        """This member's share of `topic`, or None when it cannot be known now."""
        instance = self.instance
        try:
            route = await instance.route(topic)
        except ClientError as exc:
            log.info("rebalance of %s: no route for %s yet: %s", self.group, topic, exc)
            return None
        queues = route.subscribe_queues
        if self.broadcasting:
            return set(queues)
        # Any broker knows the group's members (consumers heartbeat to every one): a master,
        # else a slave while its master is gone (Java's BrokerData.selectBrokerAddr).
        masters = [a for b in route.brokers if (a := b.master_addr)]
        askable = masters or [a for b in route.brokers for a in b.broker_addrs.values()]
        if not queues or not askable:
            return None
        try:
            ids = await instance.api.get_consumer_ids(random.choice(askable), self.group)
        except ClientError as exc:
            log.info("rebalance of %s on %s postponed: %s", self.group, topic, exc)
            return None
        if instance.client_id not in ids:
            # Our heartbeat has not reached that broker yet: keep what we have, try again soon.
            instance.request_heartbeat()
            asyncio.get_running_loop().call_later(HEARTBEAT_WAIT, self.request)
            return None
        return set(self.allocate(self.group, instance.client_id, sorted(queues), sorted(ids)))
