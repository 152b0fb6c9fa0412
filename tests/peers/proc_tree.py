"""The processes a test started, read from /proc: to find the JVMs under a starter and see
them gone (tests/java/test_orphan_safety.py, tests/java/test_rocketmq5_up.py)."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """`pid`'s children, their children, and so on."""
    found = children(pid)
    return found + [d for child in found for d in descendants(child)]


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as dead: it holds no port, no memory)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def command_line(pid: int) -> str:
    """`pid`'s command line, words separated by spaces ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def jvms_under(pid: int, main: str = "") -> list[int]:
    """The Java processes below `pid` (not the guards that started them), those running the
    class `main` if given."""
    found = []
    for process in descendants(pid):
        words = command_line(process).split()
        if words and words[0] == "java" and (not main or main in words):
            found.append(process)
    return found
