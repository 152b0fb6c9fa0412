"""The replica table, replicated among controllers with Raft (pysyncobj).

Every change to the table is a `replicas.Command` appended to pysyncobj's Raft log; each
controller applies the committed commands in log order to its own `ReplicaTable`, so every
copy goes through the same states.  Only the leader submits: a command's outcome is computed
as it is applied, and the leader hands it back to the request that submitted it.  With a
store path the log and its snapshots are files there, so a controller restarted (or all of
them) comes back with the table.

pysyncobj runs its own thread; `submit` bridges its callback to the asyncio loop, and a lock
keeps reads on the loop from seeing a command half applied.
"""

from __future__ import annotations

import _socket
import asyncio
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pysyncobj import SyncObj, SyncObjConf, SyncObjConsumer, replicated

from longboat.controller.replicas import Command, Outcome, ReplicaTable

# Importing pysyncobj replaces `socket.inet_ntop` with a Windows-only shim on every platform
# (pysyncobj/win_inet_pton.py), which breaks whatever else in the process formats an address
# (psutil's connection listing among them): the C function goes back.
socket.inet_ntop = _socket.inet_ntop

T = TypeVar("T")
# How long a submitted command may wait for its commit (a leader that lost its quorum).
COMMIT_TIMEOUT_S = 5.0


class NotLeader(Exception):
    """This controller does not lead, or lost the lead before the command committed."""


class _ReplicatedTable(SyncObjConsumer):  # type: ignore[misc]
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock  # set before the consumer's init: not part of the snapshot
        super().__init__()
        self.table = ReplicaTable()

    @replicated  # type: ignore[misc]
    def apply(self, cmd: Command) -> Outcome:
        with self._lock:
            return self.table.apply(cmd)


class ControllerRaft:
    def __init__(
        self, self_addr: str, partner_addrs: list[str], store_path: Path | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._replicated = _ReplicatedTable(self._lock)
        # Elections after 1.5-3 s of silence (pysyncobj's 0.4-1.4 s flaps on a loaded host).
        conf: dict[str, Any] = {
            "dynamicMembershipChange": False,
            "raftMinTimeout": 1.5,
            "raftMaxTimeout": 3.0,
            "appendEntriesPeriod": 0.2,
            "connectionTimeout": 5.0,
        }
        if store_path is not None:
            store_path.mkdir(parents=True, exist_ok=True)
            conf["journalFile"] = str(store_path / "raft.journal")
            conf["fullDumpFile"] = str(store_path / "raft.dump")
        self.self_addr = self_addr
        self._sync = SyncObj(
            self_addr, partner_addrs, SyncObjConf(**conf), consumers=[self._replicated]
        )

    def close(self) -> None:
        self._sync.destroy()

    @property
    def is_leader(self) -> bool:
        return bool(self._sync._isLeader())

    @property
    def term(self) -> int:
        """The Raft term this member is in (a new one at every election)."""
        return int(self._sync.raftCurrentTerm)

    @property
    def leader_addr(self) -> str | None:
        """The Raft address of the last known leader, None while there is none."""
        leader = self._sync._getLeader()
        return None if leader is None else str(leader.id)

    def read(self, fn: Callable[[ReplicaTable], T]) -> T:
        """`fn(table)` with no command half applied."""
        with self._lock:
            return fn(self._replicated.table)

    async def submit(self, cmd: Command) -> Outcome:
        """Append `cmd` to the Raft log and return its outcome once committed and applied.

        Raises NotLeader when this controller cannot commit it (not the leader, or no quorum
        within COMMIT_TIMEOUT_S)."""
        if not self.is_leader:
            raise NotLeader("this controller is not the leader")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Outcome] = loop.create_future()

        def done(result: Outcome | None, error: object) -> None:
            def settle() -> None:
                if fut.done():
                    return
                if result is None:
                    fut.set_exception(NotLeader(f"the command did not commit (error {error})"))
                else:
                    fut.set_result(result)

            loop.call_soon_threadsafe(settle)

        self._replicated.apply(cmd, callback=done)
        try:
            return await asyncio.wait_for(fut, COMMIT_TIMEOUT_S)
        except TimeoutError:
            raise NotLeader("the command did not commit in time: no quorum") from None
