"""Ports and requests for controller tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from longboat.controller.config import free_controller_ports
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.header_fields import Header
from longboat.remoting import RemotingClient

TIMEOUT_S = 10.0


controller_ports = free_controller_ports


def peers_text(ports: list[int]) -> str:
    return ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(ports))


async def call(
    client: RemotingClient,
    addr: str,
    code: RequestCode,
    header: Header | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    cmd = RemotingCommand.request(code, header.to_ext() if header else {}, body)
    return await client.request(addr, cmd, TIMEOUT_S)


async def eventually(check: Callable[[], object], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout_s} s")
        await asyncio.sleep(0.1)
