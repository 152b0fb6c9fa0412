"""Ports and requests for controller tests."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

from longboat.controller.config import RAFT_PORT_OFFSET
from longboat.protocol import RemotingCommand, RequestCode
from longboat.protocol.header_fields import Header
from longboat.remoting import RemotingClient

TIMEOUT_S = 10.0


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def controller_ports(count: int) -> list[int]:
    """`count` ports, each free together with its Raft port (+ RAFT_PORT_OFFSET)."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + RAFT_PORT_OFFSET < 65536 and _free(port + RAFT_PORT_OFFSET) and port not in ports:
            ports.append(port)
    return ports


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
