"""``--install``: bring missing server binaries in from Debian packages.

Only runs apt-get when a selected system's binary is absent; it never starts, enables or
configures a system service (the harness runs the binaries itself as child processes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable

from bench.peers.base import System


def install_missing(systems: Iterable[System]) -> str | None:
    """apt-get the packages of every system whose binaries are missing; return an error or None."""
    packages = sorted({p for s in systems if s.missing() for p in s.apt_packages})
    if not packages:
        return None
    if shutil.which("apt-get") is None:
        return "apt-get not available"
    prefix: list[str] = []
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            return "not root and no sudo for apt-get"
        prefix = ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update"], ["apt-get", "install", "-y", *packages]):
        done = subprocess.run([*prefix, *argv], env=env, check=False, timeout=900)
        if done.returncode != 0:
            return f"{' '.join(argv)} failed with {done.returncode}"
    return None
