"""Small JSON state files that survive a crash at any instant: the old or the new content, whole.

Write to a temporary file beside the target, fsync it, rename it over the target, fsync the
directory so the rename itself is durable.  A reader therefore never sees a half-written file;
a leftover temporary from a crash is ignored and replaced by the next write.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

_TMP_SUFFIX = ".tmp"


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace `path` with `data` as indented JSON, durably; raises OSError on I/O failure."""
    payload = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    write_bytes_atomic(path, payload)


def write_bytes_atomic(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + _TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make creations, renames and deletions in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any | None:
    """The file's JSON value, or None when the file does not exist.

    Raises ValueError when it exists but does not parse: with atomic writes that means the
    file was damaged outside our control, and silently starting empty would lose state.
    """
    try:
        payload = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{path.name} is not valid JSON ({exc}); fix or remove it") from None
