"""`LoopThread.run`, the hand-off every blocking call makes: results and exceptions come back
to the caller, a timeout cancels the coroutine on the loop, and a call that cannot start fails
at once instead of waiting forever."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator

import pytest

from longboat.client.errors import ClientUsageError
from longboat.client.sync import LoopThread


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    thread = LoopThread(name="test-loop-thread")
    yield thread
    thread.stop()


def test_results_and_exceptions_come_back_to_the_caller(loop_thread: LoopThread) -> None:
    async def answer() -> tuple[str, bool]:
        await asyncio.sleep(0)
        return threading.current_thread().name, True

    async def fail() -> None:
        raise KeyError("nope")

    assert loop_thread.run(answer()) == ("test-loop-thread", True)
    with pytest.raises(KeyError, match="nope"):
        loop_thread.run(fail())
    assert loop_thread.call(lambda x: x + 1, 41) == 42


def test_many_threads_share_the_loop(loop_thread: LoopThread) -> None:
    async def echo(i: int) -> int:
        await asyncio.sleep(0.001)
        return i

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda i: loop_thread.run(echo(i)), range(200)))
    assert got == list(range(200))


def test_a_timeout_cancels_the_coroutine_on_the_loop(loop_thread: LoopThread) -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(concurrent.futures.TimeoutError):
        loop_thread.run(forever(), timeout=0.05)
    assert cancelled.wait(10)
    with pytest.raises(concurrent.futures.TimeoutError):  # a deadline already past
        loop_thread.run(forever(), timeout=-1)

    async def others() -> int:
        await asyncio.sleep(0.05)
        return len(asyncio.all_tasks()) - 1

    assert loop_thread.run(others()) == 0  # neither coroutine is left running on the loop


def test_a_coroutine_cancelled_on_the_loop_raises_as_a_cancelled_future(
    loop_thread: LoopThread,
) -> None:
    async def cancelled_there() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(1)

    with pytest.raises(concurrent.futures.CancelledError):
        loop_thread.run(cancelled_there())


def test_calls_that_cannot_start_fail_at_once(loop_thread: LoopThread) -> None:
    with pytest.raises(TypeError, match="coroutine"):
        loop_thread.run(lambda: None)  # type: ignore[arg-type]

    async def inner() -> None:
        coro = asyncio.sleep(0)
        try:
            loop_thread.run(coro)
        finally:
            coro.close()

    with pytest.raises(ClientUsageError, match="loop thread"):
        loop_thread.run(inner())
