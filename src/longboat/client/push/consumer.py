"""`PushConsumer`: messages pushed to a listener, built on long-polling pulls.

The parts and who owns what:

* `RebalanceService` (client/rebalance) decides which queues this member owns and calls
  `add_queues` / `drop_queues` here, one rebalance at a time;
* per owned queue one `ProcessQueue` (the cache, flow control, committed offset) and one
  `PullLoop` (the long-polling task);
* one consume service for the whole consumer: `ConcurrentConsumeService` or
  `OrderlyConsumeService`, by the listener registered;
* one `OffsetStore`: the broker (clustering) or a local file (broadcasting).

Dropping a queue is a handshake, in this order: mark the process queue dropped (no new
listener call starts, results of late pulls are ignored), stop its pull loop and wait for it
to end, wait for its running listeners (up to `drop_timeout`), commit its offset and wait for
the broker to confirm, release its broker lock (orderly).  Only then does the rebalance add
queues, so another member (or this one) starting the queue reads the committed offset.

Shutdown: stop rebalancing, stop every pull loop, let running listeners finish (up to
`shutdown_timeout`; queued batches are not started), commit every offset, release locks,
unregister the group from the brokers, release the client instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Unpack, overload

from longboat.client._internal.instance import ClientInstance
from longboat.client.config import DEFAULT_INSTANCE_NAME, ClientConfig
from longboat.client.consume.group_consumer import GroupConsumer
from longboat.client.consume.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteOffsetStore,
)
from longboat.client.consume.process_queue import FlowLimits, ProcessQueue
from longboat.client.consume.pull_loop import PullLoop, Subscription
from longboat.client.consume_from import offset_for
from longboat.client.consumer_settings import (
    MessageModel,
    PushConsumerOptions,
    PushConsumerSettings,
)
from longboat.client.errors import ClientError, ClientUsageError, TransportError
from longboat.client.lifecycle import LEFT_OPEN_UNCOMMITTED
from longboat.client.producer import Producer
from longboat.client.push.concurrent import ConcurrentConsumeService
from longboat.client.push.listener import (
    ConcurrentListener,
    ConsumeResult,
    EitherKindListener,
    ListenerKindError,
    OrderlyListener,
    OrderlyResult,
    PayloadListener,
    check_annotation,
)
from longboat.client.push.observed import observed_listener
from longboat.client.push.orderly import OrderlyConsumeService
from longboat.client.push.redelivery import (
    Redelivery,
    restore_retry_topic,
    retry_topic,
)
from longboat.client.push.tracing import ConsumerTracing
from longboat.client.push.typed import as_message_listener
from longboat.client.rebalance.service import RebalanceService
from longboat.client.tasks import BackgroundTask, ended
from longboat.protocol.bodies import ConsumerData, SubscriptionData
from longboat.protocol.message import MessageExt
from longboat.protocol.tags import TagExpression
from longboat.protocol.topic_names import (
    RETRY_GROUP_TOPIC_PREFIX,
    validate_topic,
)
from longboat.protocol.types import MessageQueue

log = logging.getLogger(__name__)

DEFAULT_MAX_RECONSUME_TIMES = 16


@dataclass(eq=False, slots=True)
class _Owned:
    pq: ProcessQueue
    pull: PullLoop


ConsumeService = ConcurrentConsumeService | OrderlyConsumeService


class PushConsumer(GroupConsumer[PushConsumerSettings]):
    """Consumes subscribed topics for one group and hands messages to a listener."""

    left_open_consequence = LEFT_OPEN_UNCOMMITTED

    def __init__(
        self,
        group: str,
        settings: PushConsumerSettings | None = None,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        **options: Unpack[PushConsumerOptions],
    ) -> None:
        """`settings`, or its fields as keyword arguments (see `GroupConsumer`)."""
        super().__init__(group, settings or PushConsumerSettings(), options, config, namesrv_addrs)
        self._listener: ConcurrentListener | OrderlyListener | None = None
        self._orderly = False
        self._owned: dict[MessageQueue, _Owned] = {}
        self._running = asyncio.Event()
        self._running.set()
        self._service: ConsumeService | None = None
        self._store: OffsetStore | None = None
        self._rebalance: RebalanceService | None = None
        self._resets: set[asyncio.Task[None]] = set()
        self._producer: Producer | None = None
        self._tracing: ConsumerTracing | None = None
        self._persist_task = BackgroundTask()
        # Why this consumer stopped consuming: its listener returned the other kind's result.
        self.listener_error: ListenerKindError | None = None

    def __repr__(self) -> str:
        return f"PushConsumer({self.group}, {self.settings.message_model.value})"

    @property
    def broadcasting(self) -> bool:
        return self.settings.message_model is MessageModel.BROADCASTING

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    # ------------------------------------------------------------------ configuration

    def subscribe(self, topic: str, expression: str = "*", *, sql: str | None = None) -> None:
        """Consume `topic`'s messages whose tag matches `expression` ("TagA || TagB", "*"),
        or whose properties match the SQL92 selector `sql` (the broker needs
        enablePropertyFilter; see docs/filters.md).  Raises ClientUsageError for a bad topic
        or selector."""
        if problem := validate_topic(topic):
            raise ClientUsageError(f"cannot subscribe: {problem}")
        self._subscriptions[topic] = Subscription.of(expression, sql=sql)
        if self._instance is not None:
            self._instance.request_heartbeat()
            self._request_rebalance()

    def unsubscribe(self, topic: str) -> None:
        if self._subscriptions.pop(topic, None) is not None and self._instance is not None:
            self._instance.request_heartbeat()
            self._request_rebalance()

    def register_concurrent(self, listener: ConcurrentListener | PayloadListener) -> None:
        """Set a concurrent listener (before `start`): it returns `ConsumeResult` or None."""
        self.register_listener(listener)

    def register_orderly(self, listener: OrderlyListener | PayloadListener) -> None:
        """Set an orderly listener (before `start`): it returns `OrderlyResult` or None."""
        self.register_listener(listener, orderly=True)

    @overload
    def register_listener(
        self, listener: ConcurrentListener | PayloadListener, *, orderly: Literal[False] = False
    ) -> None: ...

    @overload
    def register_listener(
        self, listener: OrderlyListener | PayloadListener, *, orderly: Literal[True]
    ) -> None: ...

    @overload
    def register_listener(
        self, listener: EitherKindListener | PayloadListener, *, orderly: bool
    ) -> None: ...

    def register_listener(
        self,
        listener: ConcurrentListener | OrderlyListener | PayloadListener,
        *,
        orderly: bool = False,
    ) -> None:
        """Set the listener (before `start`): concurrent by default, or orderly.  A listener
        annotated to return the other kind's result is refused (`ListenerKindError`).  A
        listener of one annotated payload (`def on_order(order: Order)`) gets each message
        decoded (`push.typed`); ClientUsageError when no codec serves its type."""
        if self._instance is not None:
            raise ClientUsageError("register the listener before start()")
        check_annotation(listener, OrderlyResult if orderly else ConsumeResult)
        self._listener = as_message_listener(listener, orderly=orderly)
        self._orderly = orderly

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Register the group, take this member's share of the queues and start pulling.

        Raises ClientUsageError without a listener or subscription."""
        if self._instance is not None:
            return
        if self._listener is None:
            raise ClientUsageError("register a listener before start()")
        if not self._subscriptions:
            raise ClientUsageError("subscribe to at least one topic before start()")
        instance = ClientInstance.acquire(self.config, consumer_group=self.group)
        self._instance = instance
        try:
            await self._start_parts(instance)
        except BaseException:
            await self.shutdown()
            raise

    async def _start_parts(self, instance: ClientInstance) -> None:
        self._store = self._open_store(instance)
        redelivery = None
        if not self.broadcasting:
            inner_group = _inner_producer_group(self.group, instance)
            self._producer = Producer(inner_group, config=self.config)
            self._producer.owner = self
            await self._producer.start()
            redelivery = Redelivery(instance, self.group, self._producer)
        self._tracing = await ConsumerTracing.start(self.group, self.settings, self.config)
        self._service = self._make_service(instance, redelivery)
        self._service.start()
        instance.register_consumer(self)
        self._rebalance = RebalanceService(
            instance,
            self.group,
            self,
            self.settings.allocate,
            broadcasting=self.broadcasting,
            interval=self.settings.rebalance_interval,
        )
        instance.route_listeners.append(self._rebalance.on_route_changed)
        for topic in self._subscriptions:
            try:
                await instance.route(topic)
            except TransportError as exc:
                if not self.settings.lenient_start:
                    raise TransportError(
                        f"{self!r} cannot start: {exc} (within the request timeout of "
                        f"{self.config.request_timeout:g}s per name server; lenient_start=True "
                        "starts anyway and keeps trying, as RocketMQ's consumer does)",
                        exc.addr,
                    ) from exc
                log.warning("%s starts without a name server: %s", self, exc)
            except ClientUsageError:
                raise  # e.g. the address is a broker's: no later try would do better
            except ClientError as exc:
                log.warning("%s subscribes to %s, which has no route yet: %s", self, topic, exc)
        await instance.heartbeat_all()
        if not self.broadcasting:
            # The broker creates the retry topic on our heartbeat.
            with contextlib.suppress(ClientError):
                await instance.route(retry_topic(self.group), refresh=True)
        await self._rebalance.start()
        self._persist_task.start(self._persist_loop(), f"offsets {self}")

    def _open_store(self, instance: ClientInstance) -> OffsetStore:
        if not self.broadcasting:
            return RemoteOffsetStore(instance, self.group)
        name = self.config.instance_name
        if name == DEFAULT_INSTANCE_NAME:
            name = f"{self.config.client_ip}@{DEFAULT_INSTANCE_NAME}"
        store = LocalFileOffsetStore(
            Path(self.settings.offset_store_dir)
            / _file_name(self.group)
            / f"{_file_name(name)}.json"
        )
        store.open()
        return store

    def _make_service(
        self, instance: ClientInstance, redelivery: Redelivery | None
    ) -> ConsumeService:
        assert self._listener is not None and self._tracing is not None
        listener = observed_listener(self._listener, self._tracing.observers, self.group)
        if self._orderly:
            return OrderlyConsumeService(
                listener,
                instance=instance,
                group=self.group,
                workers=self.settings.consume_thread_max,
                batch_max=self.settings.consume_message_batch_max_size,
                max_reconsume_times=self.settings.max_reconsume_times,
                redelivery=redelivery,
                consumed=self._consumed,
                use_broker_locks=not self.broadcasting,
                suspend_time=self.settings.suspend_current_queue_time,
                on_kind_error=self._listener_failed,
                consume_timeout=self.settings.consume_timeout,
            )
        return ConcurrentConsumeService(
            listener,
            workers=self.settings.consume_thread_max,
            batch_max=self.settings.consume_message_batch_max_size,
            max_reconsume_times=DEFAULT_MAX_RECONSUME_TIMES
            if self.settings.max_reconsume_times is None
            else self.settings.max_reconsume_times,
            redelivery=redelivery,
            consumed=self._consumed,
            local_retry_delay=self.settings.local_retry_delay,
            consume_timeout=self.settings.consume_timeout,
            on_kind_error=self._listener_failed,
        )

    async def shutdown(self) -> None:
        """Stop pulling, finish running listeners, commit, unregister (see module doc)."""
        instance = self._instance
        if instance is None:
            return
        for task in list(self._resets):
            task.cancel()
            await ended(task)
        if self._rebalance is not None:
            await self._rebalance.stop()
            with contextlib.suppress(ValueError):
                instance.route_listeners.remove(self._rebalance.on_route_changed)
        await self._persist_task.stop()
        owned, self._owned = self._owned, {}
        await asyncio.gather(*(o.pull.stop() for o in owned.values()))
        if self._service is not None:
            await self._service.stop(self.settings.shutdown_timeout)
        if self._tracing is not None:
            await self._tracing.close()
        for mq, o in owned.items():
            o.pq.dropped = True
            self._record(mq, o.pq)
        if self._store is not None:
            try:
                await self._store.persist(owned)
            except (ClientError, OSError) as exc:
                log.warning("%s: committing offsets at shutdown failed: %s", self, exc)
            await self._store.close()
        if isinstance(self._service, OrderlyConsumeService):
            await asyncio.gather(*(self._service.release(mq) for mq in owned))
        self._instance = None
        await instance.unregister_consumer(self.group)
        if self._producer is not None:
            await self._producer.shutdown()
        await instance.release()
        self._service = self._store = self._rebalance = self._producer = self._tracing = None

    def _listener_failed(self, error: ListenerKindError) -> None:
        self.listener_error = error
        self.suspend()

    def suspend(self) -> None:
        """Stop pulling (listeners finish what is cached); `resume` starts again."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    # ------------------------------------------------------------------ observation

    def process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        """The owned queues and their process queues (a snapshot of the mapping)."""
        return {mq: o.pq for mq, o in self._owned.items()}

    async def rebalance(self) -> None:
        """Rebalance now (normally automatic)."""
        if self._rebalance is None:
            raise ClientUsageError(f"{self!r} is not started")
        await self._rebalance.rebalance()

    # ------------------------------------------------------------------ for the client instance

    def consumer_data(self) -> ConsumerData:
        subs = [sub.data(topic) for topic, sub in sorted(self._subscriptions.items())]
        if not self.broadcasting:
            subs.append(SubscriptionData.of(retry_topic(self.group), "*", 0))
        return ConsumerData(
            group_name=self.group,
            consume_type="CONSUME_PASSIVELY",
            message_model=self.settings.message_model.value,
            consume_from_where=self.settings.consume_from.value,
            subscription_data_set=subs,
        )

    def on_consumer_ids_changed(self) -> None:
        self._request_rebalance()

    def on_reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """The owned queues of `topic` in `offsets` restart there: dropped as a rebalance
        drops them (pulls stopped, running listeners done), their offsets written as given,
        and started again (RocketMQ's Java consumer does the same after a 10 s pause)."""
        table = {mq: o for mq, o in offsets.items() if mq.topic == topic}
        if self._rebalance is None or not table:
            return
        task = asyncio.create_task(self._reset(table), name=f"reset {self}")
        self._resets.add(task)
        task.add_done_callback(self._resets.discard)

    async def _reset(self, table: dict[MessageQueue, int]) -> None:
        rebalance, store = self._rebalance, self._store
        assert rebalance is not None and store is not None

        async def write(mqs: list[MessageQueue]) -> None:
            for mq in mqs:
                store.reset(mq, table[mq])
            await store.persist(mqs)

        try:
            await rebalance.restart_queues(sorted(table), write)
        except (ClientError, OSError) as exc:
            log.warning("%s: resetting offsets failed: %s", self, exc)

    def _request_rebalance(self) -> None:
        if self._rebalance is not None:
            self._rebalance.request()

    # ------------------------------------------------------------------ for the rebalance

    def topics(self) -> list[str]:
        topics = sorted(self._subscriptions)
        if not self.broadcasting:
            topics.append(retry_topic(self.group))
        return topics

    def owned(self) -> set[MessageQueue]:
        return set(self._owned)

    async def add_queues(self, mqs: list[MessageQueue]) -> None:
        for mq in mqs:
            sub = self._subscriptions.get(mq.topic) or Subscription(TagExpression.parse("*"), 0)
            pq = ProcessQueue(
                FlowLimits(
                    max_count=self.settings.pull_threshold_for_queue,
                    max_bytes=self.settings.pull_threshold_size_for_queue,
                    max_span=None if self._orderly else self.settings.consume_concurrently_max_span,
                )
            )
            pull = PullLoop(
                self.instance,
                self.group,
                mq,
                pq,
                sub,
                self.pull_settings,
                start_offset=lambda mq=mq, pq=pq: self._start_offset(mq, pq),  # type: ignore[misc]
                deliver=self._deliver,
                offset_moved=self._offset_moved,
                commit_offset=None if self.broadcasting else self._commit_offset,
                running=self._running,
                may_pull=self._lock_gate(pq),
            )
            self._owned[mq] = _Owned(pq, pull)
            pull.start()

    def _lock_gate(self, pq: ProcessQueue) -> Callable[[], bool] | None:
        """Orderly: the queue is pulled only while its broker lock is held."""
        service = self._service
        if not isinstance(service, OrderlyConsumeService):
            return None
        return lambda: service.holds_lock(pq)

    async def drop_queues(self, mqs: list[MessageQueue]) -> None:
        await asyncio.gather(*(self._drop(mq) for mq in mqs))

    async def _drop(self, mq: MessageQueue) -> None:
        owned = self._owned.pop(mq, None)
        if owned is None:
            return
        service, store = self._service, self._store
        assert service is not None and store is not None
        owned.pq.dropped = True
        await owned.pull.stop()
        if not await service.inflight.wait_idle(mq, self.settings.drop_timeout):
            log.warning(
                "%s: listener of %s still running after %.0fs; releasing the queue anyway "
                "(its messages may be delivered again to the next owner)",
                self,
                mq,
                self.settings.drop_timeout,
            )
        self._record(mq, owned.pq)
        try:
            await store.persist([mq])
        except (ClientError, OSError) as exc:
            log.warning("%s: committing %s before releasing it failed: %s", self, mq, exc)
        store.remove(mq)
        if isinstance(service, OrderlyConsumeService):
            await service.release(mq)

    # ------------------------------------------------------------------ callbacks of the parts

    async def _start_offset(self, mq: MessageQueue, pq: ProcessQueue) -> int:
        service, store = self._service, self._store
        assert service is not None and store is not None
        if isinstance(service, OrderlyConsumeService):
            await service.acquire(mq, pq)
        offset = await store.read(mq)
        if offset is None:
            addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
            offset = await offset_for(
                self.instance.api,
                addr,
                mq,
                self.settings.consume_from,
                self.settings.consume_timestamp_ms,
            )
            log.info("%s starts %s at %d (%s)", self, mq, offset, self.settings.consume_from.value)
        # Recorded at once, so a restart before the first consumed message starts here too.
        store.update(mq, offset)
        return offset

    def _deliver(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[MessageExt]) -> None:
        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            for msg in msgs:
                restore_retry_topic(msg, self.group)
        assert self._service is not None and self._tracing is not None
        for observer in self._tracing.observers:
            observer.received(self.group, msgs)
        self._service.submit(mq, pq, msgs)

    def _consumed(self, mq: MessageQueue, pq: ProcessQueue, offset: int | None) -> None:
        if pq.dropped:
            return
        if offset is not None and self._store is not None:
            self._store.update(mq, offset)
        owned = self._owned.get(mq)
        if owned is not None:
            owned.pull.wake()

    def _offset_moved(self, mq: MessageQueue, offset: int) -> None:
        if self._store is not None:
            self._store.reset(mq, offset)

    def _commit_offset(self, mq: MessageQueue) -> int | None:
        return self._store.current(mq) if self._store is not None else None

    def _record(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        offset = pq.committed_offset
        if offset is not None and self._store is not None:
            self._store.update(mq, offset)

    async def _persist_loop(self) -> None:
        assert self._store is not None
        while True:
            await asyncio.sleep(self.config.persist_consumer_offset_interval)
            await self._store.persist_all()


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", text)


def _inner_producer_group(group: str, instance: ClientInstance) -> str:
    """A producer group of its own per consumer (retry copies), legal as a name."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"CLIENT_INNER_PRODUCER_{group}_{instance.client_id}")
