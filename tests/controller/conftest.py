"""The `network` fixture: a `Network` of namespaces for the partition and fault-schedule
tests, removed at teardown even when the test fails.

They need root and `ip` (namespaces, veth links): elsewhere they are skipped, saying why —
but not in CI (`CI` set), where they run as root and a missing privilege is a failure.  A
fault kind the machine lacks (delay without sch_netem in the kernel, loss without iptables)
is not that: CI machines may lack it too, so the tests skip it with its reason everywhere
(`Network.netem_missing`, `Network.iptables_missing`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from longboat.testing.netns import Network


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces and veth links need root"
    if shutil.which("ip") is None:
        return "ip not found (iproute2)"
    return None


@pytest.fixture
def network() -> Iterator[Network]:
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"in CI the partition tests must run: {reason}")
        pytest.skip(reason)
    net = Network()
    try:
        yield net
    finally:
        net.close()
