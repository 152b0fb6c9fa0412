"""The pull answer's suggestWhichBrokerId and a slave's changes to the answer
(`broker/core/pull_suggest.py`), driven by hand: RocketMQ 4.x's rule row by row."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from longboat.broker.config import BrokerConfig
from longboat.broker.core.pull_suggest import PullSuggestion, physical_memory
from longboat.broker.state.subscription_groups import SubscriptionGroupTable
from longboat.protocol import ResponseCode
from longboat.protocol.bodies import SubscriptionGroupConfig
from longboat.store import GetResult, GetStatus, MessageStore

GiB = 1 << 30
END = 100 * GiB  # the commit log's end


@dataclass
class LogEnd:
    max_physical_offset: int = END


def read(last_physical_offset: int, status: GetStatus = GetStatus.FOUND) -> GetResult:
    return GetResult(status, 5, 0, 10, last_physical_offset=last_physical_offset)


def suggestion(tmp_path: Path, **settings: object) -> PullSuggestion:
    groups = SubscriptionGroupTable(tmp_path / "groups.json")
    groups.put(
        SubscriptionGroupConfig("slow-to-2", broker_id=0, which_broker_when_consume_slowly=2)
    )
    config = BrokerConfig().updated(**settings)
    return PullSuggestion(config, cast(MessageStore, LogEnd()), groups)


def test_the_rule_of_a_master(tmp_path: Path) -> None:
    limit = physical_memory() * 40 // 100  # accessMessageInMemoryMaxRatio's default
    far, near = END - limit - 1, END - limit
    ok = ResponseCode.SUCCESS
    rows = [
        # (slaveReadEnable, group, last scanned entry's commit-log offset, suggested)
        (False, "g", far, 0),
        (False, "g", near, 0),
        (True, "g", far, 1),  # the group's default whichBrokerWhenConsumeSlowly
        (True, "g", near, 0),
        (True, "g", -1, 0),  # nothing scanned (a pull at the queue's end)
        (True, "slow-to-2", far, 2),
    ]
    for slave_read, group, last, suggested in rows:
        s = suggestion(tmp_path, slave_read_enable=slave_read)
        assert s.answer(group, read(last), ok) == (ok, suggested), (slave_read, group, last)


@pytest.mark.parametrize("slave_read", [False, True])
def test_a_slave_sends_a_caught_up_consumer_back_and_never_moves_its_offset(
    tmp_path: Path, slave_read: bool
) -> None:
    s = suggestion(
        tmp_path,
        broker_role="SLAVE",
        broker_id=1,
        slave_read_enable=slave_read,
        access_message_in_memory_max_ratio=0,
    )
    assert s.answer("g", read(-1, GetStatus.OFFSET_OVERFLOW_ONE), ResponseCode.PULL_NOT_FOUND) == (
        ResponseCode.PULL_NOT_FOUND,
        0,
    )
    assert s.answer("g", read(END - 10), ResponseCode.SUCCESS) == (
        ResponseCode.SUCCESS,
        1 if slave_read else 0,
    )
    moved = read(-1, GetStatus.OFFSET_OVERFLOW_BADLY)
    assert s.answer("g", moved, ResponseCode.PULL_OFFSET_MOVED) == (
        ResponseCode.PULL_RETRY_IMMEDIATELY,
        0,
    )
