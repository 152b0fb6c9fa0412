"""Drive the Node.js ali-ons test peer (tests/peers/node) from pytest.

Longboat claims that unmodified RocketMQ clients work against it; the Node.js client ali-ons is
one of them. The scripts in ``tests/peers/node`` wrap ali-ons' producer and push consumer and print
one JSON object per line on stdout; these helpers run them and hand the events to the test.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from peers.process import PeerProcess, run_peer

NODE_DIR = Path(__file__).resolve().parent / "node"

# Exit codes of the scripts (see tests/peers/node/lib/common.js).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3


# The one way to skip the ali-ons tests (documented in the README); without it a machine that
# cannot run the peer fails those tests with the reason.
SKIP_VARIABLE = "LONGBOAT_SKIP_NODE"


def node_peer_problem() -> str | None:
    """Why the ali-ons peer cannot run here, or None when ``node`` is on PATH and ``npm ci``
    (``make node-peers``) has installed ali-ons."""
    if shutil.which("node") is None:
        return "node is not on PATH: install Node.js"
    if not (NODE_DIR / "node_modules" / "ali-ons").is_dir():
        return "ali-ons is not installed: run `make node-peers`"
    return None


def require_node_peer() -> None:
    """Skip under LONGBOAT_SKIP_NODE=1; otherwise fail, with the reason, when the peer cannot
    run (pytest.skip / pytest.fail)."""
    if os.environ.get(SKIP_VARIABLE) == "1":
        pytest.skip(f"{SKIP_VARIABLE}=1: tests driving the ali-ons Node.js client are skipped")
    problem = node_peer_problem()
    if problem is not None:
        pytest.fail(
            f"the ali-ons peer cannot run: {problem} (or set {SKIP_VARIABLE}=1)", pytrace=False
        )


def _script_path(script: str) -> Path:
    """Resolve ``produce.js`` / ``consume`` to the peer script, refusing anything else."""
    name = script if script.endswith(".js") else f"{script}.js"
    path = NODE_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"no node peer script {name!r} in {NODE_DIR}")
    return path


def _command(script: str, args: tuple[str, ...]) -> list[str]:
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    return [node, str(_script_path(script)), *args]


def _name(script: str, args: tuple[str, ...]) -> str:
    return f"node peer {script} {' '.join(args)}"


def run_node_peer(
    script: str, *args: str, timeout: float, check: bool = True
) -> list[dict[str, Any]]:
    """Run a peer script to completion and return its events (see `peers.process.run_peer`).

    Pass a ``--timeout-ms`` matching ``timeout``, so the script reports its own timeout (exit 3)
    instead of being killed.
    """
    return run_peer(
        _name(script, args), _command(script, args), NODE_DIR, timeout=timeout, check=check
    )


def start_node_peer(script: str, *args: str) -> PeerProcess:
    """Start a peer script in the background; see `peers.process.PeerProcess`.

    Typical use: ``with start_node_peer("consume.js", ...) as c: c.wait_for("ready", 20)``, then
    produce, then ``c.wait(30)``.
    """
    return PeerProcess(_name(script, args), _command(script, args), NODE_DIR)
