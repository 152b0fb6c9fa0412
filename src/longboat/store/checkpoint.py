"""What recovery trusts: the checkpoint file and the abort marker.

The abort marker exists while the store is open; finding it at open means the last run did
not close (crash, SIGKILL, power loss).  The checkpoint records two commit-log offsets:

  * `commit_log_flushed`: the log is durable below it;
  * `dispatched`: every record below it has its consume-queue entry and index entries
    durable too (they are synced before the checkpoint is written).

After an unclean stop, recovery trusts nothing past min(dispatched, commit_log_flushed): it
re-verifies the log from there and rebuilds queues and index for what it finds.

It also records the store time of the newest record dispatched (RocketMQ's
physicMsgTimestamp), so store times keep increasing across a restart without reading the
newest entry of every queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from longboat.store.json_file import fsync_dir, read_json, write_json_atomic

CHECKPOINT_FILE = "checkpoint.json"
ABORT_FILE = "abort"


@dataclass(slots=True)
class Checkpoint:
    commit_log_flushed: int = 0
    dispatched: int = 0
    timestamp_ms: int = 0
    newest_store_ms: int | None = None  # None: a checkpoint written before it was recorded

    @property
    def recover_from(self) -> int:
        return min(self.commit_log_flushed, self.dispatched)


def load_checkpoint(root: Path) -> Checkpoint | None:
    try:
        data = read_json(root / CHECKPOINT_FILE)
    except ValueError:
        return None  # damaged: recovery falls back to verifying the whole log
    if not isinstance(data, dict):
        return None
    try:
        return Checkpoint(
            commit_log_flushed=int(data["commitLogFlushed"]),
            dispatched=int(data["dispatched"]),
            timestamp_ms=int(data.get("timestamp", 0)),
            newest_store_ms=(
                int(data["physicMsgTimestamp"]) if "physicMsgTimestamp" in data else None
            ),
        )
    except (KeyError, TypeError, ValueError):
        return None


def save_checkpoint(root: Path, cp: Checkpoint) -> None:
    write_json_atomic(
        root / CHECKPOINT_FILE,
        {
            "commitLogFlushed": cp.commit_log_flushed,
            "dispatched": cp.dispatched,
            "timestamp": cp.timestamp_ms,
            "physicMsgTimestamp": cp.newest_store_ms or 0,
        },
    )


def create_abort_marker(root: Path) -> bool:
    """Create the marker; True when it already existed (the last run did not close)."""
    path = root / ABORT_FILE
    existed = path.exists()
    path.touch()
    fsync_dir(root)
    return existed


def remove_abort_marker(root: Path) -> None:
    (root / ABORT_FILE).unlink(missing_ok=True)
    fsync_dir(root)
