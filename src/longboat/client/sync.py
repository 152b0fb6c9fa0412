"""The blocking facade: the asyncio client for code that is not async.

One daemon thread per process runs an event loop (`LoopThread.shared()`); every blocking
object hands its work to that loop and waits for the answer, so all of them share one client
instance and its connections, just as async code in one loop does.  The async objects live
on the loop thread and are only touched there; the blocking methods may be called from any
thread, concurrently.

Callbacks given to `Producer.send_async` run on the loop thread: keep them short and never
call a blocking method of this module from inside one (it would wait for its own thread).

A new blocking client (e.g. a push consumer) follows the same pattern: build the async object
with `LoopThread.shared().call(...)`, and wrap each coroutine method with `.run(...)`.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from typing import Any, Literal, Self, TypeVar, Unpack, overload

from longboat.client import admin as _admin
from longboat.client import lite_pull as _lite_pull
from longboat.client import producer as _producer
from longboat.client.config import ClientConfig
from longboat.client.consumer_settings import (
    LitePullOptions,
    LitePullSettings,
    PushConsumerOptions,
    PushConsumerSettings,
)
from longboat.client.errors import ClientUsageError
from longboat.client.lifecycle import warn_not_shut_down
from longboat.client.message import Message, MessageExt, MessageQueue, SendResult
from longboat.client.producer import DEFAULT_PRODUCER_GROUP, MAX_MESSAGE_SIZE, SendCallback
from longboat.client.push import consumer as _push
from longboat.client.push.listener import (
    ConcurrentListener,
    EitherKindListener,
    ListenerKindError,
    OrderlyListener,
)
from longboat.client.push.process_queue import ProcessQueue
from longboat.client.selector import QueueSelector
from longboat.protocol.bodies import ClusterInfo, ConsumerConnection, TopicConfig, TopicRouteData
from longboat.protocol.compression import COMPRESS_OVER
from longboat.protocol.types import PERM_READ, PERM_WRITE
from longboat.remoting.event_loop import new_event_loop

T = TypeVar("T")
log = logging.getLogger(__name__)
# How long each client left open may take to shut down at interpreter exit.
EXIT_SHUTDOWN_TIMEOUT = 10.0

__all__ = ["Admin", "LitePullConsumer", "LoopThread", "Producer", "PushConsumer"]


class LoopThread:
    """An event loop (uvloop's when installed) on a daemon thread, with calls that block the
    caller until done."""

    _shared: LoopThread | None = None
    _shared_lock = threading.Lock()

    def __init__(self, name: str = "longboat-client") -> None:
        self.loop = new_event_loop()
        # Started blocking clients, shut down (and so committed) by `stop` if still open.
        self.open: set[_Blocking] = set()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @classmethod
    def shared(cls) -> LoopThread:
        """The process's loop thread, started on first use and stopped at exit."""
        with cls._shared_lock:
            if cls._shared is None or not cls._shared._thread.is_alive():
                cls._shared = cls()
                atexit.register(cls._shared.stop)
            return cls._shared

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def _check_thread(self) -> None:
        if threading.current_thread() is self._thread:
            raise ClientUsageError(
                "blocking client call made on the client's own loop thread (from a callback?); "
                "use the async API there"
            )

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start `coro` on the loop; the returned future completes with its outcome."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and return its result (or raise its exception); after
        `timeout` seconds the coroutine is cancelled and `concurrent.futures.TimeoutError`
        raised.

        Every blocking call comes through here, so the hand-off is lean: the loop starts the
        task and its completion releases a lock the caller waits on, where `submit`'s
        `run_coroutine_threadsafe` chains a second future to the task both ways."""
        self._check_thread()
        if not asyncio.iscoroutine(coro):
            raise TypeError(f"a coroutine was expected, got {coro!r}")
        loop = self.loop
        finished = threading.Lock()
        finished.acquire()
        started: list[asyncio.Task[T]] = []
        failed: list[BaseException] = []

        def start() -> None:
            try:
                task = loop.create_task(coro)
            except BaseException as exc:  # e.g. the loop is closing: the caller hears it
                failed.append(exc)
                finished.release()
                return
            started.append(task)
            task.add_done_callback(lambda _: finished.release())

        loop.call_soon_threadsafe(start)
        if not finished.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            # Callbacks run in order: the task exists by the time this one runs.
            loop.call_soon_threadsafe(lambda: started and started[0].cancel())
            raise concurrent.futures.TimeoutError
        if failed:
            raise failed[0]
        try:
            return started[0].result()
        except asyncio.CancelledError:  # cancelled on the loop (its shutdown): as `submit`'s
            raise concurrent.futures.CancelledError from None

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a plain function on the loop thread (to touch loop-owned objects)."""

        async def wrapper() -> T:
            return fn(*args, **kwargs)

        return self.run(wrapper())

    def stop(self) -> None:
        """Shut down the clients still open (with a warning each), then stop the loop."""
        for client in list(self.open):
            warn_not_shut_down(client, "; shutting it down now (consumers commit)")
            try:
                client.shutdown(timeout=EXIT_SHUTDOWN_TIMEOUT)
            except Exception as exc:  # at exit: report and go on to the next
                log.warning("shutting %r down at exit failed: %s", client, exc)
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout=5)


class _Blocking:
    """Start/shutdown and context management around one async client object."""

    _async: Any

    def __init__(self, loop_thread: LoopThread | None) -> None:
        self._loop = loop_thread or LoopThread.shared()

    def start(self) -> None:
        self._loop.run(self._async.start())
        self._loop.open.add(self)

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop and release, as the async `shutdown()`; `timeout` bounds the wait (seconds)."""
        self._loop.open.discard(self)
        self._loop.run(self._async.shutdown(), timeout)

    def __repr__(self) -> str:
        return f"sync.{self._async!r}"

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


# Each blocking class has the async class's constructor and methods with the same signatures
# (plus `loop_thread`), checked by tests/client/test_sync_signatures.py.


class Producer(_Blocking):
    """Blocking `longboat.client.producer.Producer`; same arguments, same errors."""

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        send_timeout: float = 3.0,
        retry_times: int | None = None,
        compress_over: int = COMPRESS_OVER,
        max_message_size: int = MAX_MESSAGE_SIZE,
        loop_thread: LoopThread | None = None,
    ) -> None:
        super().__init__(loop_thread)
        self._async: _producer.Producer = self._loop.call(
            _producer.Producer,
            group,
            config=config,
            namesrv_addrs=namesrv_addrs,
            send_timeout=send_timeout,
            retry_times=retry_times,
            compress_over=compress_over,
            max_message_size=max_message_size,
        )

    def send(
        self,
        msg: Message,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: Any = None,
    ) -> SendResult:
        return self._loop.run(
            self._async.send(
                msg,
                timeout=timeout,
                queue=queue,
                selector=selector,
                arg=arg,
                sharding_key=sharding_key,
            )
        )

    def send_async(
        self,
        msg: Message,
        callback: SendCallback | None = None,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: Any = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Start a send; the future completes when the broker answers.  `callback(result,
        error)` runs on the loop thread."""

        async def go() -> SendResult:
            return await self._async.send_async(
                msg,
                callback,
                timeout=timeout,
                queue=queue,
                selector=selector,
                arg=arg,
                sharding_key=sharding_key,
            )

        return self._loop.submit(go())

    def send_oneway(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: Any = None,
    ) -> None:
        self._loop.run(
            self._async.send_oneway(
                msg, queue=queue, selector=selector, arg=arg, sharding_key=sharding_key
            )
        )

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        return self._loop.run(self._async.fetch_publish_queues(topic))

    def send_batch(
        self,
        msgs: Sequence[Message],
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: Any = None,
    ) -> SendResult:
        return self._loop.run(
            self._async.send_batch(
                msgs,
                timeout=timeout,
                queue=queue,
                selector=selector,
                arg=arg,
                sharding_key=sharding_key,
            )
        )

    def send_encoded_batch(
        self,
        topic: str,
        body: bytes,
        msg_ids: str,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        return self._loop.run(
            self._async.send_encoded_batch(topic, body, msg_ids, timeout=timeout, queue=queue)
        )

    def reserve_uniq_keys(self, n: int) -> tuple[str, int]:
        return self._async.reserve_uniq_keys(n)


class LitePullConsumer(_Blocking):
    """Blocking `longboat.client.lite_pull.LitePullConsumer`; same arguments, same errors."""

    def __init__(
        self,
        group: str,
        settings: LitePullSettings | None = None,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        loop_thread: LoopThread | None = None,
        **options: Unpack[LitePullOptions],
    ) -> None:
        super().__init__(loop_thread)
        self._async: _lite_pull.LitePullConsumer = self._loop.call(
            _lite_pull.LitePullConsumer,
            group,
            settings,
            config=config,
            namesrv_addrs=namesrv_addrs,
            **options,
        )

    @property
    def settings(self) -> LitePullSettings:
        return self._async.settings

    def subscribe(self, topic: str, expression: str = "*", *, sql: str | None = None) -> None:
        self._loop.call(self._async.subscribe, topic, expression, sql=sql)

    def unsubscribe(self, topic: str) -> None:
        self._loop.call(self._async.unsubscribe, topic)

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        self._loop.call(self._async.assign, list(queues))

    def assignment(self) -> set[MessageQueue]:
        return self._loop.call(self._async.assignment)

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._loop.run(self._async.fetch_message_queues(topic))

    def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        return self._loop.run(self._async.poll(timeout))

    def getmany(
        self, timeout: float = 5.0, max_records: int | None = None
    ) -> dict[MessageQueue, list[MessageExt]]:
        return self._loop.run(self._async.getmany(timeout, max_records))

    def __iter__(self) -> Iterator[MessageExt]:
        """`for msg in consumer`: messages one by one until `shutdown()` (from another
        thread) or the loop is left; positions follow each message, as `async for`."""
        while True:
            try:
                yield self._loop.run(self._async.__anext__())
            except StopAsyncIteration:
                return

    def seek(self, mq: MessageQueue, offset: int) -> None:
        self._loop.run(self._async.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        self._loop.run(self._async.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        self._loop.run(self._async.seek_to_end(mq))

    def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        self._loop.run(self._async.seek_to_timestamp(mq, timestamp_ms))

    def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        self._loop.run(self._async.commit(offsets))

    def committed(self, mq: MessageQueue) -> int | None:
        return self._loop.run(self._async.committed(mq))

    def position(self, mq: MessageQueue) -> int | None:
        return self._loop.call(self._async.position, mq)

    def process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        return self._loop.call(self._async.process_queues)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        self._loop.call(self._async.pause, list(queues))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self._loop.call(self._async.resume, list(queues))

    def rebalance(self) -> None:
        self._loop.run(self._async.rebalance())


class Admin(_Blocking):
    """Blocking `longboat.client.admin.Admin`; same arguments, same errors."""

    def __init__(
        self,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        loop_thread: LoopThread | None = None,
    ) -> None:
        super().__init__(loop_thread)
        self._async: _admin.Admin = self._loop.call(
            _admin.Admin, config=config, namesrv_addrs=namesrv_addrs
        )

    def cluster_info(self) -> ClusterInfo:
        return self._loop.run(self._async.cluster_info())

    def topics(self) -> list[str]:
        return self._loop.run(self._async.topics())

    def route(self, topic: str) -> TopicRouteData:
        return self._loop.run(self._async.route(topic))

    def route_or_none(self, topic: str) -> TopicRouteData | None:
        return self._loop.run(self._async.route_or_none(topic))

    def master_brokers(self, cluster: str | None = None) -> dict[str, str]:
        return self._loop.run(self._async.master_brokers(cluster))

    def create_topic(
        self,
        topic: str,
        *,
        queue_nums: int = 8,
        read_queue_nums: int | None = None,
        write_queue_nums: int | None = None,
        perm: int = PERM_READ | PERM_WRITE,
        order: bool = False,
        cluster: str | None = None,
        wait: bool = True,
        timeout: float = 10.0,
    ) -> list[str]:
        return self._loop.run(
            self._async.create_topic(
                topic,
                queue_nums=queue_nums,
                read_queue_nums=read_queue_nums,
                write_queue_nums=write_queue_nums,
                perm=perm,
                order=order,
                cluster=cluster,
                wait=wait,
                timeout=timeout,
            )
        )

    def update_topic(
        self,
        topic: str,
        *,
        read_queue_nums: int | None = None,
        write_queue_nums: int | None = None,
        perm: int | None = None,
        order: bool | None = None,
        shrink: bool = False,
        timeout: float = 10.0,
    ) -> list[str]:
        return self._loop.run(
            self._async.update_topic(
                topic,
                read_queue_nums=read_queue_nums,
                write_queue_nums=write_queue_nums,
                perm=perm,
                order=order,
                shrink=shrink,
                timeout=timeout,
            )
        )

    def user_topics(self) -> list[str]:
        return self._loop.run(self._async.user_topics())

    def delete_topic(self, topic: str) -> list[str]:
        return self._loop.run(self._async.delete_topic(topic))

    def broker_runtime(self, addr: str) -> dict[str, str]:
        return self._loop.run(self._async.broker_runtime(addr))

    def topic_status(self, topic: str) -> list[_admin.QueueStatus]:
        return self._loop.run(self._async.topic_status(topic))

    def broker_topics(self, addr: str) -> dict[str, TopicConfig]:
        return self._loop.run(self._async.broker_topics(addr))

    def groups(self) -> list[str]:
        return self._loop.run(self._async.groups())

    def group_connections(self, group: str, topic: str | None = None) -> ConsumerConnection:
        return self._loop.run(self._async.group_connections(group, topic))

    def group_summary(self, group: str) -> tuple[int, int | None]:
        return self._loop.run(self._async.group_summary(group))

    def consumed_topics(self, group: str) -> list[str]:
        return self._loop.run(self._async.consumed_topics(group))

    def consumer_ids(self, group: str, topic: str | None = None) -> list[str]:
        return self._loop.run(self._async.consumer_ids(group, topic))

    def group_progress(
        self, group: str, topic: str | None = None, *, with_lag_time: bool = True
    ) -> list[_admin.QueueProgress]:
        return self._loop.run(self._async.group_progress(group, topic, with_lag_time=with_lag_time))

    def reset_offsets(
        self,
        group: str,
        topic: str,
        to: _admin.ResetTarget,
        *,
        force: bool = False,
        queue_id: int | None = None,
    ) -> dict[MessageQueue, int]:
        return self._loop.run(
            self._async.reset_offsets(group, topic, to, force=force, queue_id=queue_id)
        )

    def message_by_id(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return self._loop.run(self._async.message_by_id(msg_id, topic))

    def messages_by_key(
        self,
        topic: str,
        key: str,
        *,
        begin_ms: int = 0,
        end_ms: int | None = None,
        max_num: int = 64,
    ) -> list[MessageExt]:
        return self._loop.run(
            self._async.messages_by_key(
                topic, key, begin_ms=begin_ms, end_ms=end_ms, max_num=max_num
            )
        )


class PushConsumer(_Blocking):
    """Blocking `longboat.client.push.PushConsumer`; same arguments, same errors.

    Plain-function listeners run on the consumer's own worker threads (never on the caller's
    thread); async listeners run on the facade's loop thread."""

    def __init__(
        self,
        group: str,
        settings: PushConsumerSettings | None = None,
        *,
        config: ClientConfig | None = None,
        namesrv_addrs: str | list[str] | None = None,
        loop_thread: LoopThread | None = None,
        **options: Unpack[PushConsumerOptions],
    ) -> None:
        super().__init__(loop_thread)
        self._async: _push.PushConsumer = self._loop.call(
            _push.PushConsumer,
            group,
            settings,
            config=config,
            namesrv_addrs=namesrv_addrs,
            **options,
        )

    @property
    def settings(self) -> PushConsumerSettings:
        return self._async.settings

    @property
    def broadcasting(self) -> bool:
        return self._async.broadcasting

    def subscribe(self, topic: str, expression: str = "*", *, sql: str | None = None) -> None:
        self._loop.call(self._async.subscribe, topic, expression, sql=sql)

    def unsubscribe(self, topic: str) -> None:
        self._loop.call(self._async.unsubscribe, topic)

    @property
    def listener_error(self) -> ListenerKindError | None:
        return self._async.listener_error

    def register_concurrent(self, listener: ConcurrentListener) -> None:
        self._loop.call(self._async.register_concurrent, listener)

    def register_orderly(self, listener: OrderlyListener) -> None:
        self._loop.call(self._async.register_orderly, listener)

    @overload
    def register_listener(
        self, listener: ConcurrentListener, *, orderly: Literal[False] = False
    ) -> None: ...

    @overload
    def register_listener(self, listener: OrderlyListener, *, orderly: Literal[True]) -> None: ...

    @overload
    def register_listener(self, listener: EitherKindListener, *, orderly: bool) -> None: ...

    def register_listener(
        self, listener: ConcurrentListener | OrderlyListener, *, orderly: bool = False
    ) -> None:
        self._loop.call(self._async.register_listener, listener, orderly=orderly)

    def suspend(self) -> None:
        self._loop.call(self._async.suspend)

    def resume(self) -> None:
        self._loop.call(self._async.resume)

    def process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        return self._loop.call(self._async.process_queues)

    def rebalance(self) -> None:
        self._loop.run(self._async.rebalance())
