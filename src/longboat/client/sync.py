"""The blocking facade: the asyncio client for code that is not async.

One daemon thread per process runs an event loop (`LoopThread.shared()`); every blocking
object hands its work to that loop and waits for the answer, so all of them share one client
instance and its connections, just as async code in one loop does.  The async objects live
on the loop thread and are only touched there; the blocking methods may be called from any
thread, concurrently.

Callbacks given to `Producer.send_async` run on the loop thread: keep them short and never
call a blocking method of this module from inside one (it would wait for its own thread).

No signature is written twice.  A blocking method is the async class's own method passed
through one of four wrappers, which say how it reaches the loop (`_waits_for` a coroutine,
`_on_loop` for a plain method touching loop-owned state, `_submits` for one that returns a
future, `_in_caller_thread` for a thread-safe one); a constructor is `_constructor_of` the
async class.  Each wrapper carries the signature over twice: for type checkers through a
`ParamSpec` (`Callable[Concatenate[A, P], Coroutine[..., R]]` becomes a method taking `P` and
returning `R`, so mypy checks user code against the async class's parameters), and at run
time through `functools.wraps` / `__signature__` (so `inspect`, `help()` and editors show
them; compared with the async class by tests/client/test_sync_signatures.py).  A new method
of an async class is one line here.  The constructors also take `loop_thread` (another
`LoopThread` than the shared one); a `ParamSpec` cannot add a keyword, so type checkers do not
see that one.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar

from longboat.client import admin as _admin
from longboat.client import lite_pull as _lite_pull
from longboat.client import producer as _producer
from longboat.client.consumer_settings import LitePullSettings, PushConsumerSettings
from longboat.client.errors import ClientUsageError
from longboat.client.lifecycle import InstanceUser, warn_not_shut_down
from longboat.client.message import MessageExt
from longboat.client.push import consumer as _push
from longboat.client.push.listener import ListenerKindError
from longboat.remoting.event_loop import new_event_loop

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
# The async client class a blocking class wraps.  Covariant: a method the async class inherits
# (`Admin.group_progress` from `GroupAdmin`) wraps onto the blocking class of the subclass.
A = TypeVar("A", bound=InstanceUser, covariant=True)
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
        self.open: set[_Blocking[Any]] = set()
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


class _Blocking(Generic[A]):
    """Start/shutdown and context management around one async client object, built on (and
    only ever touched from) the loop thread."""

    def __init__(
        self,
        async_cls: Callable[..., A],
        loop_thread: LoopThread | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self._loop = loop_thread or LoopThread.shared()
        self._async: A = self._loop.call(async_cls, *args, **kwargs)

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


def _constructor_of(
    async_cls: Callable[P, A],
) -> Callable[[Callable[..., None]], Callable[Concatenate[Any, P], None]]:
    """Give a blocking class's `__init__` the parameters of `async_cls`'s, plus `loop_thread`
    (keyword-only) at run time."""
    theirs = inspect.signature(async_cls.__init__, eval_str=True)  # type: ignore[misc]
    params = list(theirs.parameters.values())
    # `loop_thread` goes after the keyword-only parameters, before a `**options`.
    at = len(params) - (params[-1].kind is inspect.Parameter.VAR_KEYWORD)
    loop_thread = inspect.Parameter(
        "loop_thread", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=LoopThread | None
    )
    signature = theirs.replace(parameters=[*params[:at], loop_thread, *params[at:]])

    def decorate(init: Callable[..., None]) -> Callable[Concatenate[Any, P], None]:
        init.__signature__ = signature  # type: ignore[attr-defined]
        return init

    return decorate


def _waits_for(
    fn: Callable[Concatenate[A, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[_Blocking[A], P], R]:
    """A coroutine method as a blocking one: run on the loop; the caller waits for its result."""
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"{fn.__qualname__} is not a coroutine function: use _on_loop")

    @functools.wraps(fn)
    def method(self: _Blocking[A], /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._loop.run(fn(self._async, *args, **kwargs))

    return method


def _on_loop(fn: Callable[Concatenate[A, P], R]) -> Callable[Concatenate[_Blocking[A], P], R]:
    """A plain method that touches loop-owned state, called on the loop thread."""
    if inspect.iscoroutinefunction(fn):
        raise TypeError(f"{fn.__qualname__} is a coroutine function: use _waits_for")

    @functools.wraps(fn)
    def method(self: _Blocking[A], /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._loop.call(fn, self._async, *args, **kwargs)

    return method


def _submits(
    fn: Callable[Concatenate[A, P], Awaitable[R]],
) -> Callable[Concatenate[_Blocking[A], P], concurrent.futures.Future[R]]:
    """A method that starts work on the loop and returns an awaitable: the caller gets a
    `concurrent.futures.Future` of its result instead and does not wait."""
    theirs = inspect.signature(fn, eval_str=True)

    @functools.wraps(fn)
    def method(
        self: _Blocking[A], /, *args: P.args, **kwargs: P.kwargs
    ) -> concurrent.futures.Future[R]:
        async def started() -> R:
            return await fn(self._async, *args, **kwargs)

        return self._loop.submit(started())

    method.__signature__ = theirs.replace(  # type: ignore[attr-defined]
        return_annotation=concurrent.futures.Future
    )
    method.__doc__ = (
        f"{fn.__doc__}\n\nHere the result comes as a `concurrent.futures.Future`; callbacks run "
        "on the loop thread."
    )
    return method


def _in_caller_thread(
    fn: Callable[Concatenate[A, P], R],
) -> Callable[Concatenate[_Blocking[A], P], R]:
    """A thread-safe plain method, called directly in the caller's thread (no hand-off)."""

    @functools.wraps(fn)
    def method(self: _Blocking[A], /, *args: P.args, **kwargs: P.kwargs) -> R:
        return fn(self._async, *args, **kwargs)

    return method


class Producer(_Blocking[_producer.Producer]):
    """Blocking `longboat.client.producer.Producer`; same arguments, same errors."""

    @_constructor_of(_producer.Producer)
    def __init__(self, *args: Any, loop_thread: LoopThread | None = None, **kwargs: Any) -> None:
        super().__init__(_producer.Producer, loop_thread, args, kwargs)

    send = _waits_for(_producer.Producer.send)
    send_async = _submits(_producer.Producer.send_async)
    send_oneway = _waits_for(_producer.Producer.send_oneway)
    recall = _waits_for(_producer.Producer.recall)
    send_own = _waits_for(_producer.Producer.send_own)
    send_batch = _waits_for(_producer.Producer.send_batch)
    send_own_batch = _waits_for(_producer.Producer.send_own_batch)
    send_encoded_batch = _waits_for(_producer.Producer.send_encoded_batch)
    fetch_publish_queues = _waits_for(_producer.Producer.fetch_publish_queues)
    reserve_uniq_keys = _in_caller_thread(_producer.Producer.reserve_uniq_keys)


class LitePullConsumer(_Blocking[_lite_pull.LitePullConsumer]):
    """Blocking `longboat.client.lite_pull.LitePullConsumer`; same arguments, same errors."""

    @_constructor_of(_lite_pull.LitePullConsumer)
    def __init__(self, *args: Any, loop_thread: LoopThread | None = None, **kwargs: Any) -> None:
        super().__init__(_lite_pull.LitePullConsumer, loop_thread, args, kwargs)

    @property
    def settings(self) -> LitePullSettings:
        return self._async.settings

    subscribe = _on_loop(_lite_pull.LitePullConsumer.subscribe)
    unsubscribe = _on_loop(_lite_pull.LitePullConsumer.unsubscribe)
    assign = _on_loop(_lite_pull.LitePullConsumer.assign)
    assignment = _on_loop(_lite_pull.LitePullConsumer.assignment)
    fetch_message_queues = _waits_for(_lite_pull.LitePullConsumer.fetch_message_queues)
    poll = _waits_for(_lite_pull.LitePullConsumer.poll)
    getmany = _waits_for(_lite_pull.LitePullConsumer.getmany)
    seek = _waits_for(_lite_pull.LitePullConsumer.seek)
    seek_to_begin = _waits_for(_lite_pull.LitePullConsumer.seek_to_begin)
    seek_to_end = _waits_for(_lite_pull.LitePullConsumer.seek_to_end)
    seek_to_timestamp = _waits_for(_lite_pull.LitePullConsumer.seek_to_timestamp)
    commit = _waits_for(_lite_pull.LitePullConsumer.commit)
    committed = _waits_for(_lite_pull.LitePullConsumer.committed)
    position = _on_loop(_lite_pull.LitePullConsumer.position)
    process_queues = _on_loop(_lite_pull.LitePullConsumer.process_queues)
    pause = _on_loop(_lite_pull.LitePullConsumer.pause)
    resume = _on_loop(_lite_pull.LitePullConsumer.resume)
    rebalance = _waits_for(_lite_pull.LitePullConsumer.rebalance)

    def __iter__(self) -> Iterator[MessageExt]:
        """`for msg in consumer`: messages one by one until `shutdown()` (from another
        thread) or the loop is left; positions follow each message, as `async for`."""
        while True:
            try:
                yield self._loop.run(self._async.__anext__())
            except StopAsyncIteration:
                return


class Admin(_Blocking[_admin.Admin]):
    """Blocking `longboat.client.admin.Admin`; same arguments, same errors."""

    @_constructor_of(_admin.Admin)
    def __init__(self, *args: Any, loop_thread: LoopThread | None = None, **kwargs: Any) -> None:
        super().__init__(_admin.Admin, loop_thread, args, kwargs)

    cluster_info = _waits_for(_admin.Admin.cluster_info)
    topics = _waits_for(_admin.Admin.topics)
    user_topics = _waits_for(_admin.Admin.user_topics)
    route = _waits_for(_admin.Admin.route)
    route_or_none = _waits_for(_admin.Admin.route_or_none)
    master_brokers = _waits_for(_admin.Admin.master_brokers)
    create_topic = _waits_for(_admin.Admin.create_topic)
    update_topic = _waits_for(_admin.Admin.update_topic)
    delete_topic = _waits_for(_admin.Admin.delete_topic)
    broker_runtime = _waits_for(_admin.Admin.broker_runtime)
    broker_config = _waits_for(_admin.Admin.broker_config)
    sync_state_data = _waits_for(_admin.Admin.sync_state_data)
    topic_status = _waits_for(_admin.Admin.topic_status)
    broker_topics = _waits_for(_admin.Admin.broker_topics)
    groups = _waits_for(_admin.Admin.groups)
    group_connections = _waits_for(_admin.Admin.group_connections)
    group_summary = _waits_for(_admin.Admin.group_summary)
    consumed_topics = _waits_for(_admin.Admin.consumed_topics)
    consumer_ids = _waits_for(_admin.Admin.consumer_ids)
    group_progress = _waits_for(_admin.Admin.group_progress)
    reset_offsets = _waits_for(_admin.Admin.reset_offsets)
    message_by_id = _waits_for(_admin.Admin.message_by_id)
    messages_by_key = _waits_for(_admin.Admin.messages_by_key)


class PushConsumer(_Blocking[_push.PushConsumer]):
    """Blocking `longboat.client.push.PushConsumer`; same arguments, same errors.

    Plain-function listeners run on the consumer's own worker threads (never on the caller's
    thread); async listeners run on the facade's loop thread."""

    @_constructor_of(_push.PushConsumer)
    def __init__(self, *args: Any, loop_thread: LoopThread | None = None, **kwargs: Any) -> None:
        super().__init__(_push.PushConsumer, loop_thread, args, kwargs)

    @property
    def settings(self) -> PushConsumerSettings:
        return self._async.settings

    @property
    def broadcasting(self) -> bool:
        return self._async.broadcasting

    @property
    def listener_error(self) -> ListenerKindError | None:
        return self._async.listener_error

    subscribe = _on_loop(_push.PushConsumer.subscribe)
    unsubscribe = _on_loop(_push.PushConsumer.unsubscribe)
    register_concurrent = _on_loop(_push.PushConsumer.register_concurrent)
    register_orderly = _on_loop(_push.PushConsumer.register_orderly)
    register_listener = _on_loop(_push.PushConsumer.register_listener)
    suspend = _on_loop(_push.PushConsumer.suspend)
    resume = _on_loop(_push.PushConsumer.resume)
    process_queues = _on_loop(_push.PushConsumer.process_queues)
    rebalance = _waits_for(_push.PushConsumer.rebalance)
