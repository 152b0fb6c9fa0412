"""The client instance: what producers, consumers and admins of one process share.

RocketMQ's `MQClientInstance`: one client id, one connection per address, one route cache,
one heartbeat to every broker, and one handler for the requests brokers send us.

Lifecycle and invariants:

* `ClientInstance.acquire(config)` returns the instance of `config.client_id()` on the running
  event loop, creating it (and its two background tasks) on first use; each `acquire` is
  matched by one `release`, and the last release shuts the instance down: background tasks
  cancelled, connections closed.  Producers and consumers unregister their groups from the
  brokers before releasing (`unregister_producer` / `unregister_consumer`).
* A consumer group appears at most once per instance, because brokers tell group members apart
  by client id.  `acquire(config, consumer_group=g)` reserves `g` synchronously; with the
  default instance name a process gets `ip@pid#2`, `#3`, ... for further members of a group.
* Routes are cached per topic, refreshed every `poll_name_server_interval` for every cached or
  subscribed topic, and on demand (`route(topic, refresh=True)`); concurrent lookups of one
  topic share one name-server request.  The broker address table is rebuilt from the cached
  routes after each change, so a broker that left every route is forgotten.
* Pulls go to the broker of a queue's group that the last answer suggested, or another of the
  group when that one is unknown or unreachable (`pull_target`, `client/_internal/pull_target.py`);
  everything else of a group (sends, offsets, locks, admin) goes to its master.
* Heartbeats go to every known broker every `heartbeat_broker_interval`, and at once after a
  subscription change (`heartbeat_all`, awaited by consumers that must be registered before
  they rebalance or pull).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from longboat.client._internal.api import ClientAPI
from longboat.client._internal.broker_timers import BrokerTimers
from longboat.client._internal.pull_target import PullTargets
from longboat.client._internal.route import TopicRoute
from longboat.client.config import DEFAULT_INSTANCE_NAME, ClientConfig
from longboat.client.errors import ClientError, ClientUsageError, NoRouteError
from longboat.client.tasks import ended
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.bodies import ConsumerData, HeartbeatData, TopicRouteData
from longboat.protocol.errors import ProtocolError
from longboat.protocol.headers import (
    CheckTransactionStateRequestHeader,
    ConsumerGroupHeader,
    ResetOffsetRequestHeader,
)
from longboat.protocol.message import MessageExt, decode_record
from longboat.protocol.properties import Prop
from longboat.protocol.table_bodies import decode_offset_table
from longboat.protocol.topic_names import AUTO_CREATE_TOPIC_KEY, DEFAULT_TOPIC_QUEUE_NUMS
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection, RemotingClient, Router

log = logging.getLogger(__name__)

# (connection the check came on, its header, the half as the producer sent it).
TransactionChecker = Callable[[Connection, CheckTransactionStateRequestHeader, MessageExt], None]


class InstanceConsumer(Protocol):
    """What a consumer registered on the instance provides to it."""

    @property
    def group(self) -> str: ...

    def consumer_data(self) -> ConsumerData:
        """The group's heartbeat entry: consume type, model, subscriptions."""
        ...

    def on_consumer_ids_changed(self) -> None:
        """A broker says the group's membership changed: rebalance soon.  Must not block."""
        ...

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """A broker moved the group's offsets on `topic` (RESET_CONSUMER_CLIENT_OFFSET, what
        `mqadmin resetOffsetByTime` makes it send to each live member).  Must not block."""
        ...


RouteListener = Callable[[str, TopicRoute], None]


class ClientInstance:
    _registry: dict[tuple[asyncio.AbstractEventLoop, str], ClientInstance] = {}

    def __init__(self, config: ClientConfig, client_id: str) -> None:
        self.config = config
        self.client_id = client_id
        self.router = Router(f"client {client_id}")
        self.remoting = RemotingClient(
            self.router,
            connect_timeout=config.connect_timeout,
            signer=config.signer(),
            tls=config.tls_context(),
        )
        self.api = ClientAPI(self.remoting, config)
        self.timers = BrokerTimers(self.api.get_broker_config)
        self.router.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_ids_changed)
        self.router.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction)
        self.router.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        self._transaction_checkers: dict[str, TransactionChecker] = {}
        self._refs = 0
        self._producers: set[str] = set()
        self._consumers: dict[str, InstanceConsumer | None] = {}
        self._routes: dict[str, TopicRoute] = {}
        self._route_fetches: dict[str, asyncio.Future[TopicRoute]] = {}
        self._brokers: dict[str, dict[int, str]] = {}
        self.broker_versions: dict[str, int] = {}
        self.pull_targets = PullTargets()
        self.route_listeners: list[RouteListener] = []
        self._heartbeat_lock = asyncio.Lock()
        self._heartbeat_wanted = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.closed = False

    # ------------------------------------------------------------------ sharing

    @classmethod
    def acquire(cls, config: ClientConfig, *, consumer_group: str | None = None) -> ClientInstance:
        """The shared instance for `config` on the running loop (see the module docstring)."""
        loop = asyncio.get_running_loop()
        member = 1
        while True:
            client_id = config.client_id(member)
            inst = cls._registry.get((loop, client_id))
            if inst is None or inst.closed:
                inst = cls(config, client_id)
                cls._registry[(loop, client_id)] = inst
                inst._start()
                break
            if consumer_group is None or consumer_group not in inst._consumers:
                break
            if config.instance_name != DEFAULT_INSTANCE_NAME:
                raise ClientUsageError(
                    f"consumer group {consumer_group!r} already has a member with client id "
                    f"{client_id}; give each member its own instance_name"
                )
            member += 1
        if consumer_group is not None:
            inst._consumers[consumer_group] = None
        inst._refs += 1
        return inst

    async def release(self) -> None:
        """Drop one reference; the last one shuts the instance down."""
        self._refs -= 1
        if self._refs > 0 or self.closed:
            return
        self.closed = True
        for key, inst in list(self._registry.items()):
            if inst is self:
                del self._registry[key]
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            await ended(task)
        await self.remoting.close()

    def _start(self) -> None:
        config = self.config
        log.info(
            "client %s: name server(s) %s (%s)",
            self.client_id,
            ";".join(config.namesrv_addrs),
            config.namesrv_source,
        )
        self._tasks = [
            asyncio.create_task(self._route_loop(), name=f"routes {self.client_id}"),
            asyncio.create_task(self._heartbeat_loop(), name=f"heartbeat {self.client_id}"),
        ]

    # ------------------------------------------------------------------ members

    def register_producer(self, group: str) -> None:
        if group in self._producers:
            raise ClientUsageError(f"producer group {group!r} is already started on {self}")
        self._producers.add(group)
        self._heartbeat_wanted.set()

    def register_consumer(self, consumer: InstanceConsumer) -> None:
        """Attach a consumer whose group was reserved by `acquire(..., consumer_group=)`."""
        if self._consumers.get(consumer.group, None) is not None:
            raise ClientUsageError(f"consumer group {consumer.group!r} is already on {self}")
        self._consumers[consumer.group] = consumer

    async def unregister_producer(self, group: str) -> None:
        self._producers.discard(group)
        await self._unregister_everywhere(producer_group=group)

    async def unregister_consumer(self, group: str) -> None:
        self._consumers.pop(group, None)
        await self._unregister_everywhere(consumer_group=group)

    async def _unregister_everywhere(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        async def one(addr: str) -> None:
            try:
                await self.api.unregister_client(
                    addr,
                    self.client_id,
                    producer_group=producer_group,
                    consumer_group=consumer_group,
                )
            except ClientError as exc:
                log.info("unregister from %s failed: %s", addr, exc)

        await asyncio.gather(*(one(a) for a in self.broker_addrs()))

    # ------------------------------------------------------------------ routes

    async def route(
        self, topic: str, *, refresh: bool = False, allow_default: bool = False
    ) -> TopicRoute:
        """The topic's route from the cache, or the name server when absent or `refresh`.

        With `allow_default`, a topic unknown to the name servers gets the auto-create topic's
        route (the broker creates the topic on the first send); otherwise NoRouteError."""
        if not refresh and (cached := self._routes.get(topic)) is not None:
            return cached
        pending = self._route_fetches.get(topic)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch_route(topic, allow_default))
            self._route_fetches[topic] = pending
            pending.add_done_callback(lambda _f: self._route_fetches.pop(topic, None))
        return await asyncio.shield(pending)

    async def _fetch_route(self, topic: str, allow_default: bool) -> TopicRoute:
        try:
            route = TopicRoute.build(topic, await self.api.get_route(topic))
        except NoRouteError as exc:
            if not allow_default:
                self._forget_route(topic)
                raise
            try:
                default = await self.api.get_route(AUTO_CREATE_TOPIC_KEY)
            except NoRouteError:
                self._forget_route(topic)
                raise NoRouteError(
                    exc.code,
                    f"no route for topic {topic}, and no broker offers to auto-create topics "
                    f"(no {AUTO_CREATE_TOPIC_KEY} route): create the topic first",
                    retriable=False,
                    addr=exc.addr,
                    request_code=exc.request_code,
                ) from exc
            route = TopicRoute.build(topic, default, default_queue_nums=DEFAULT_TOPIC_QUEUE_NUMS)
        self._store_route(topic, route)
        return route

    def _store_route(self, topic: str, route: TopicRoute) -> None:
        previous = self._routes.get(topic)
        self._routes[topic] = route
        if route.same_as(previous):
            return
        self._rebuild_broker_table()
        for listener in list(self.route_listeners):
            try:
                listener(topic, route)
            except Exception:
                log.exception("route listener failed for %s", topic)

    def _forget_route(self, topic: str) -> None:
        if self._routes.pop(topic, None) is not None:
            self._rebuild_broker_table()

    def _rebuild_broker_table(self) -> None:
        table: dict[str, dict[int, str]] = {}
        for route in self._routes.values():
            for b in route.brokers:
                table.setdefault(b.broker_name, {}).update(b.broker_addrs)
        # A new address (a new broker, or a master back on another port) hears our heartbeat
        # at once: it answers the group's members to rebalancing clients.
        known = {addr for ids in self._brokers.values() for addr in ids.values()}
        had_new = any(addr not in known for ids in table.values() for addr in ids.values())
        self._brokers = table
        if had_new:
            self._heartbeat_wanted.set()

    def learn_route(self, topic: str, data: TopicRouteData) -> TopicRoute:
        """Cache a route obtained elsewhere (admin tools that already asked)."""
        route = TopicRoute.build(topic, data)
        self._store_route(topic, route)
        return route

    def master_addr(self, broker_name: str) -> str | None:
        return self._brokers.get(broker_name, {}).get(0)

    async def find_master_addr(self, broker_name: str, topic: str | None = None) -> str:
        """The master address of `broker_name`, refreshing `topic`'s route if unknown."""
        addr = self.master_addr(broker_name)
        if addr is None and topic is not None:
            await self.route(topic, refresh=True)
            addr = self.master_addr(broker_name)
        if addr is None:
            raise NoRouteError(
                0, f"no master address known for broker {broker_name}", request_code=None
            )
        return addr

    async def pull_target(self, mq: MessageQueue) -> tuple[int, str]:
        """(broker id, address) to pull `mq` from: the broker of its group the last answer
        suggested, another of the group when that one is not listed or did not answer lately;
        refreshes the topic's route once when the group is unknown (NoRouteError after)."""
        chosen = self.pull_targets.choose(mq, self._brokers.get(mq.broker_name, {}))
        if chosen is None:
            await self.route(mq.topic, refresh=True)
            chosen = self.pull_targets.choose(mq, self._brokers.get(mq.broker_name, {}))
        if chosen is None:
            raise NoRouteError(
                0, f"no address known for broker {mq.broker_name}", request_code=None
            )
        return chosen

    def group_addrs(self, broker_name: str) -> dict[int, str]:
        """Broker id → address of one broker group, as the cached routes list it."""
        return dict(self._brokers.get(broker_name, {}))

    def broker_addrs(self, *, masters_only: bool = False) -> list[str]:
        return sorted(
            addr
            for ids in self._brokers.values()
            for bid, addr in ids.items()
            if bid == 0 or not masters_only
        )

    def topics_in_use(self) -> set[str]:
        topics = set(self._routes)
        for consumer in self._consumers.values():
            if consumer is not None:
                topics.update(s.topic for s in consumer.consumer_data().subscription_data_set)
        return topics

    async def refresh_routes(self) -> None:
        for topic in sorted(self.topics_in_use()):
            cached = self._routes.get(topic)
            try:
                await self.route(
                    topic,
                    refresh=True,
                    allow_default=cached is not None and cached.via_default_topic,
                )
            except ClientError as exc:
                log.debug("route refresh for %s failed: %s", topic, exc)

    async def _route_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.poll_name_server_interval)
            await self.refresh_routes()

    # ------------------------------------------------------------------ heartbeats

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_groups=sorted(self._producers),
            consumer_data_set=[c.consumer_data() for c in self._consumers.values() if c],
        )

    async def heartbeat_all(self) -> None:
        """Send the heartbeat to every known broker now; failures are logged, not raised."""
        async with self._heartbeat_lock:
            self._heartbeat_wanted.clear()
            data = self.heartbeat_data()
            if not data.producer_groups and not data.consumer_data_set:
                return
            has_consumers = bool(data.consumer_data_set)
            await asyncio.gather(
                *(
                    self._heartbeat_one(addr, data)
                    for addr in self.broker_addrs(masters_only=not has_consumers)
                )
            )

    async def _heartbeat_one(self, addr: str, data: HeartbeatData) -> None:
        try:
            self.broker_versions[addr] = await self.api.heartbeat(addr, data)
        except ClientError as exc:
            log.info("heartbeat to %s failed: %s", addr, exc)

    def request_heartbeat(self) -> None:
        """Ask for a heartbeat soon (subscription changed) without waiting for it."""
        self._heartbeat_wanted.set()

    async def _heartbeat_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.heartbeat_broker_interval):
                    await self._heartbeat_wanted.wait()
            await self.heartbeat_all()

    # ------------------------------------------------------------------ broker → client

    def _on_ids_changed(self, conn: Connection, cmd: RemotingCommand) -> None:
        group = ConsumerGroupHeader.from_ext(cmd.ext_fields).consumerGroup
        consumer = self._consumers.get(group)
        if consumer is not None:
            log.debug("consumer ids of %s changed (notice from %s)", group, conn.peer)
            consumer.on_consumer_ids_changed()

    def add_transaction_checker(self, group: str, checker: TransactionChecker) -> None:
        """Route the broker's CHECK_TRANSACTION_STATE for halves of `group` to `checker`."""
        self._transaction_checkers[group] = checker

    def remove_transaction_checker(self, group: str) -> None:
        self._transaction_checkers.pop(group, None)

    def _on_check_transaction(self, conn: Connection, cmd: RemotingCommand) -> None:
        try:
            header = CheckTransactionStateRequestHeader.from_ext(cmd.ext_fields)
            msg = decode_record(cmd.body, decompress=True)
        except ProtocolError as exc:
            log.warning("malformed transaction check from %s: %s", conn.peer, exc)
            return
        group = msg.properties.get(Prop.PGROUP, "")
        checker = self._transaction_checkers.get(group)
        if checker is None:
            log.warning(
                "transaction check from %s for group %r, not started here", conn.peer, group
            )
            return
        checker(conn, header, msg)

    def _on_reset_offset(self, conn: Connection, cmd: RemotingCommand) -> None:
        try:
            header = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
            offsets = decode_offset_table(cmd.body)
        except ProtocolError as exc:
            log.warning("malformed offset reset from %s: %s", conn.peer, exc)
            return
        consumer = self._consumers.get(header.group)
        if consumer is not None:
            log.info("offsets of %s on %s reset by %s", header.group, header.topic, conn.peer)
            consumer.on_reset_offset(header.topic, offsets)

    def __repr__(self) -> str:
        return f"ClientInstance({self.client_id})"
