"""Longboat's own loops run on uvloop (a dependency wherever it builds): the CLI's servers and
commands, and the blocking client's loop thread that Spark's connector and every
`longboat.client.sync` object share."""

from __future__ import annotations

import asyncio

import uvloop

from longboat.cli.runtime import run
from longboat.client.sync import LoopThread


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_the_cli_runs_its_commands_on_uvloop() -> None:
    assert isinstance(run(_running_loop()), uvloop.Loop)


def test_the_blocking_clients_loop_thread_runs_uvloop() -> None:
    thread = LoopThread(name="test-loop-thread")
    try:
        assert isinstance(thread.run(_running_loop()), uvloop.Loop)
    finally:
        thread.stop()
