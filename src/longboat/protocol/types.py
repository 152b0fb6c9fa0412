"""The small values every layer names: a message queue and the permission flags.

A `MessageQueue` (topic, broker, queue id) is how clients, the broker's lock and offset
bodies, and the admin tools address one queue; the permission flags are the bits of a topic's
`perm` and of a broker's `brokerPermission`, as RocketMQ's `PermName` defines them.  Both
travel in JSON bodies (`bodies`) but are not bodies themselves, so they live here, where
someone new to the tree looks first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longboat.protocol.errors import ProtocolError

# PermName: a topic's (or broker's) permission bits.
PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
# Set only on the auto-create topic (TBW102): topics created from it inherit its permissions.
PERM_INHERIT = 1
PERM_READ_WRITE = PERM_READ | PERM_WRITE

# MixAll.MASTER_ID: a broker group's master has broker id 0, its slaves 1, 2, ...
MASTER_ID = 0


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """One queue of a topic on one broker; orders by (topic, broker, queue id), the order in
    which every client sorts queues so rebalance allocations agree."""

    topic: str
    broker_name: str
    queue_id: int

    def to_dict(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_dict(cls, d: Any) -> MessageQueue:
        """Raises ProtocolError when `d` is not a message-queue object."""
        if isinstance(d, tuple):  # an object used as a fastjson map key
            d = dict(d)
        if not isinstance(d, dict):
            raise ProtocolError("message queue is not a JSON object")
        return cls(str(d["topic"]), str(d["brokerName"]), int(d["queueId"]))

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker_name}:{self.queue_id}"
