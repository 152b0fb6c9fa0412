"""Which broker of the group a consumer should pull a queue from next: the
`suggestWhichBrokerId` of every pull answer, by RocketMQ 4.x's rule (PullMessageProcessor):

| slaveReadEnable | the read ended far behind the log's end | suggested broker id                  |
|-----------------|-----------------------------------------|--------------------------------------|
| false           | either                                  | the master, 0                        |
| true            | yes                                     | group's whichBrokerWhenConsumeSlowly |
| true            | no (or nothing was scanned)             | group's brokerId                     |

(a group's defaults: whichBrokerWhenConsumeSlowly 1, the first slave; brokerId 0, the master).
"Behind" is the commit log's end minus the last scanned entry's commit-log offset, against
`accessMessageInMemoryMaxRatio` percent of this machine's physical memory: a consumer that far
back reads from disk, and a slave can take that load off the master.  The rule is the same on
a slave, so a slave sends a consumer that caught up back to the master.

A slave also changes two things of the answer, as RocketMQ's does: it stores no offset a
pull carries (its offsets are the master's, copied), and a PULL_OFFSET_MOVED becomes
PULL_RETRY_IMMEDIATELY pointing at the group's brokerId — a slave that is behind its master
must not move a consumer's offset (RocketMQ's `offsetCheckInSlave` false, its default).
"""

from __future__ import annotations

import os

from longboat.broker.config import BrokerConfig
from longboat.broker.state.subscription_groups import SubscriptionGroupTable
from longboat.protocol import ResponseCode
from longboat.protocol.types import MASTER_ID
from longboat.store import GetResult, MessageStore


def physical_memory() -> int:
    """This machine's physical memory in bytes (RocketMQ's TOTAL_PHYSICAL_MEMORY_SIZE)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class PullSuggestion:
    def __init__(
        self, config: BrokerConfig, store: MessageStore, groups: SubscriptionGroupTable
    ) -> None:
        self.store = store
        self.groups = groups
        self.slave_read = config.slave_read_enable
        self.is_slave = config.is_slave
        self.in_memory_bytes = physical_memory() * config.access_message_in_memory_max_ratio // 100

    def answer(self, group: str, got: GetResult, code: int) -> tuple[int, int]:
        """The pull answer's (response code, suggestWhichBrokerId)."""
        if self.is_slave and code == ResponseCode.PULL_OFFSET_MOVED:
            return ResponseCode.PULL_RETRY_IMMEDIATELY, self.groups.get(group).broker_id
        if not self.slave_read:
            return code, MASTER_ID
        settings = self.groups.get(group)
        pulled = got.last_physical_offset
        behind = pulled >= 0 and self.store.max_physical_offset - pulled > self.in_memory_bytes
        return code, settings.which_broker_when_consume_slowly if behind else settings.broker_id
