"""Keep a server the test session starts from outliving the session: ``python lifeline.py CMD...``.

A JVM the suite starts (RocketMQ's name server, broker, proxy) would otherwise run on after the
pytest process is SIGKILLed (a CI timeout, an OOM kill, a Ctrl-\\): nothing tells it. This guard
sits between the two:

* its parent (the test process) holds the write end of the guard's stdin and never writes; the
  kernel closes it when that process dies, however it dies, so the guard reads EOF and SIGKILLs
  the command;
* it starts the command with ``PR_SET_PDEATHSIG = SIGKILL`` (Linux), so if the guard itself is
  killed the command dies too. The guard forks from its only thread: that signal follows the
  death of the forking *thread*, which is why the test process cannot set it directly (it may
  spawn from a worker thread that ends long before the session);
* SIGTERM and SIGINT are passed on to the command (RocketMQ's shutdown hooks run), and the guard
  exits with the command's exit status.

Started by path, not as a module, so it imports nothing from the suite and starts in a few
milliseconds; see `guarded` in peers.process, and tests/java/test_orphan_safety.py.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL this process when the guard dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def main(command: list[str]) -> int:
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)

    def pass_on(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, pass_on)

    def watch_parent() -> None:
        while os.read(0, 4096):  # nothing is ever written: only EOF ends this
            pass
        if child.poll() is None:
            child.kill()

    threading.Thread(target=watch_parent, daemon=True).start()
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
