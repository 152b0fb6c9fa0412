"""A master's timer progress, copied by its slaves, so a slave that becomes master does not
deliver again the timers its master delivered (the timer checkpoint is the master's own file;
the timer queue it describes is replicated, the file is not).

GET_TIMER_CHECK_POINT (60) answers RocketMQ's TimerCheckpoint body: `lastReadTimeMs` (every
timer due before it is done: delivered or recalled), `lastTimerLogFlushPos` (0: Longboat has
no timer log), `lastTimerQueueOffset` (the timer-queue offsets read into the wheel),
`masterTimerQueueOffset` (the queue's end), its data version (0, the time, 0), then one field
of Longboat's after them, which RocketMQ's decoder leaves unread: the master's commit-log end
when it answered.  The deliveries the first field counts were appended below that end, so a
slave takes the time as its own only once its log holds that end: a timer whose delivered copy
it lacks is never counted done.  A master that does not send the end (RocketMQ) is not
followed.

The slave keeps it in `config/timerSynced.json`:

    {"doneBeforeMs": t}                    every timer due before t is done
    {"pendingMs": t2, "pendingLogEnd": e}  so is every one due before t2, once the log holds e

`TimerService.start` reads it when the slave becomes master.
"""

from __future__ import annotations

import struct
from pathlib import Path

from longboat.protocol import ProtocolError
from longboat.store.json_file import read_json, write_json_atomic

SYNCED_FILE = "timerSynced.json"
_BODY = struct.Struct(">8q")
_ROCKETMQ_SIZE = 56


def checkpoint_body(
    done_before_ms: int, read_offset: int, queue_end: int, log_end: int, now_ms: int
) -> bytes:
    """GET_TIMER_CHECK_POINT's answer (see the module's docstring)."""
    return _BODY.pack(done_before_ms, 0, read_offset, queue_end, 0, now_ms, 0, log_end)


def take_checkpoint(path: Path, body: bytes, log_end: int) -> None:
    """A slave takes its master's answer: the time it says becomes this broker's once its
    log (now `log_end`) holds the master's end; until then it waits in the file.  A pending
    time that the log now covers is taken first.  ProtocolError for a body of another
    shape; a RocketMQ master's (no log end) changes nothing."""
    if len(body) == _ROCKETMQ_SIZE:
        return
    if len(body) != _BODY.size:
        raise ProtocolError(f"a timer checkpoint of {len(body)} bytes")
    done_before_ms, *_, master_end = _BODY.unpack(body)
    state = {"doneBeforeMs": done_before(path, log_end)}
    if master_end <= log_end:
        state["doneBeforeMs"] = max(state["doneBeforeMs"], done_before_ms)
    else:
        state |= {"pendingMs": done_before_ms, "pendingLogEnd": master_end}
    write_json_atomic(path, state)


def done_before(path: Path, log_end: int) -> int:
    """The time before which every timer is done, as the file says for a log ending at
    `log_end`; 0 when it says nothing."""
    state = read_json(path) or {}
    done = int(state.get("doneBeforeMs", 0))
    if "pendingMs" in state and int(state.get("pendingLogEnd", 0)) <= log_end:
        done = max(done, int(state["pendingMs"]))
    return done
