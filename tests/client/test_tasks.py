"""`ended`: a stopped task's cancellation is absorbed, the caller's own never is."""

from __future__ import annotations

import asyncio

import pytest

from longboat.client.tasks import ended


async def test_a_cancelled_task_ends_quietly() -> None:
    task = asyncio.ensure_future(asyncio.sleep(60))
    await asyncio.sleep(0)
    task.cancel()
    await ended(task)
    assert task.cancelled()


async def test_the_callers_timeout_is_not_swallowed() -> None:
    async def stubborn() -> None:
        # Keeps running after its first cancellation, like a task finishing a commit.
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(60)

    task = asyncio.ensure_future(stubborn())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await ended(task)
    task.cancel()
    await ended(task)


async def test_cleanup_while_already_cancelled_still_finishes() -> None:
    waited: list[bool] = []

    async def owner() -> None:
        child = asyncio.ensure_future(asyncio.sleep(60))
        try:
            await asyncio.sleep(60)
        finally:
            child.cancel()
            await ended(child)
            waited.append(child.cancelled())

    task = asyncio.ensure_future(owner())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert waited == [True]
