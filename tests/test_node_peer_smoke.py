"""The ali-ons test peer starts, and fails fast and clearly when no name server answers.

There is no broker in this test: it only proves that the Node.js peer is installed and that its
failure mode is a prompt non-zero exit with a readable reason, so a later interop test that
points it at a dead address fails with a message instead of a hang.
"""

from __future__ import annotations

import socket

import pytest

from peers.ali_ons import (
    EXIT_FAILED,
    EXIT_USAGE,
    run_node_peer,
    start_node_peer,
)

pytestmark = [
    pytest.mark.node,
    pytest.mark.usefixtures("node_peer"),
]


@pytest.fixture
def dead_namesrv() -> str:
    """A 127.0.0.1 address nobody listens on: bind a port, then release it without listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.mark.parametrize(
    "script,args",
    [
        ("produce.js", ("--topic", "SmokeTopic", "--count", "1")),
        ("consume.js", ("--topic", "SmokeTopic", "--group", "smoke-group", "--expect", "1")),
    ],
)
def test_unreachable_name_server_fails_clearly(
    script: str, args: tuple[str, ...], dead_namesrv: str
) -> None:
    with start_node_peer(script, "--namesrv", dead_namesrv, "--timeout-ms", "10000", *args) as peer:
        peer.wait(timeout=15, check=False)
        assert peer.proc.returncode == EXIT_FAILED
        assert "cannot connect to name server" in peer.stderr()
        assert dead_namesrv in peer.stderr()
        errors = [e for e in peer.seen if e["event"] == "error"]
        assert errors and errors[-1]["fatal"] is True
        assert not [e for e in peer.seen if e["event"] in ("sent", "msg", "done")]


def test_run_node_peer_raises_with_stderr(dead_namesrv: str) -> None:
    with pytest.raises(AssertionError, match="cannot connect to name server"):
        run_node_peer("produce.js", "--namesrv", dead_namesrv, "--topic", "SmokeTopic", timeout=15)


def test_usage_error_exits_2() -> None:
    events = run_node_peer("consume.js", "--namesrv", "127.0.0.1:1", timeout=15, check=False)
    assert events == []
    with start_node_peer("produce.js", "--no-such-option") as peer:
        peer.wait(timeout=15, check=False)
        assert peer.proc.returncode == EXIT_USAGE
        assert "usage" in peer.stderr()
