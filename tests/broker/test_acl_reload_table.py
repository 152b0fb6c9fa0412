"""The ACL file's reload, driven with a fake clock: a change is in force for the first request
0.5 s after the last check (never later), a file that does not parse keeps the rules in force
and is read again at its next change."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.test_acl_wire import ACL
from longboat.acl.access_control import RELOAD_CHECK_S, AccessControl
from longboat.acl.plain_acl import PUB

OTHER_ALLOWED = ACL.replace("      - Orders=PUB\n", "      - Orders=PUB\n      - Other=PUB\n", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def may_send(acl: AccessControl, topic: str) -> bool:
    return acl.decide("10.0.0.1", "producer1", lambda secret: True, lambda: {topic: PUB}) is None


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Clock, AccessControl]:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    clock = Clock()
    return path, clock, AccessControl(path, admin_codes=frozenset(), clock=clock)


def test_a_change_is_in_force_half_a_second_after_the_last_check(
    setup: tuple[Path, Clock, AccessControl],
) -> None:
    path, clock, acl = setup
    assert RELOAD_CHECK_S == 0.5  # the figure docs/security.md states
    assert not may_send(acl, "Other")
    path.write_text(OTHER_ALLOWED)
    clock.now += 0.49
    assert not may_send(acl, "Other")  # checked at most every 0.5 s
    clock.now += 0.01
    assert may_send(acl, "Other")


def test_a_broken_file_keeps_the_rules_and_the_next_good_one_is_read(
    setup: tuple[Path, Clock, AccessControl], caplog: pytest.LogCaptureFixture
) -> None:
    path, clock, acl = setup
    path.write_text(OTHER_ALLOWED)
    clock.now += RELOAD_CHECK_S
    assert may_send(acl, "Other")
    path.write_text("accounts: [oops")
    clock.now += RELOAD_CHECK_S
    with caplog.at_level(logging.ERROR, logger="longboat.acl.access_control"):
        assert may_send(acl, "Other")  # the broken file was read (logged) and not used
    assert "cannot be used, the previous rules stay" in caplog.text
    path.write_text(ACL)
    clock.now += RELOAD_CHECK_S
    assert not may_send(acl, "Other")
