"""Consumer groups as the broker sees them: members (connections with a client id) and the
group's subscriptions, fed by HEART_BEAT and emptied by UNREGISTER_CLIENT, closed connections
and silence.

Rebalancing happens in the clients: each member asks any broker for the group's member list
and takes its share of the queues, so every broker must know every live member, and members
must hear (NOTIFY_CONSUMER_IDS_CHANGED) when the list changes.  This module keeps the table
and says *whether* a change happened; the processor sends the notifications.

Per group (as data):

    members: connection → Member(client id, language, version, last heartbeat)
    subscriptions: topic → SubscriptionData (with the client's subVersion)

A heartbeat adds or refreshes its member, and replaces the group's subscriptions: a topic
new or with a larger subVersion is taken, a topic absent from the heartbeat is dropped
(RocketMQ's ConsumerGroupInfo.updateSubscription).  A group with no members left is removed.
Invariant: a connection appears in `_groups_of[conn]` iff it is a member of each of those
groups.  "Changed" means the member list or the subscribed topic set changed — what members
must rebalance on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from longboat.protocol.bodies import ConsumerData, SubscriptionData
from longboat.remoting import Connection


@dataclass(slots=True)
class Member:
    client_id: str
    language: int
    version: int
    last_heartbeat: float


@dataclass(slots=True)
class ConsumerGroup:
    """A consumer group as its members' heartbeats describe it: the latest heartbeat's
    settings win, as in RocketMQ (their defaults are the heartbeat body's)."""

    name: str
    consume_type: str
    message_model: str
    consume_from_where: str
    members: dict[Connection, Member] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        """Distinct client ids of live members, sorted (what every broker must agree on)."""
        return sorted({m.client_id for c, m in self.members.items() if not c.closed})


class ConsumerManager:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._groups: dict[str, ConsumerGroup] = {}
        self._groups_of: dict[Connection, set[str]] = {}

    # ------------------------------------------------------------------ reading

    def group(self, name: str) -> ConsumerGroup | None:
        return self._groups.get(name)

    def groups(self) -> list[str]:
        return sorted(self._groups)

    def subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self._groups.get(group)
        return info.subscriptions.get(topic) if info is not None else None

    def client_ids(self, group: str) -> list[str]:
        info = self._groups.get(group)
        return info.client_ids() if info is not None else []

    def members(self, group: str) -> list[Connection]:
        info = self._groups.get(group)
        return [c for c in info.members if not c.closed] if info is not None else []

    # ------------------------------------------------------------------ changing

    def heartbeat(
        self, conn: Connection, client_id: str, language: int, version: int, data: ConsumerData
    ) -> bool:
        """Register or refresh `conn` as a member of `data.group_name`; True when the member
        list or the subscribed topics changed."""
        info = self._groups.get(data.group_name)
        if info is None:
            info = self._groups[data.group_name] = ConsumerGroup(
                data.group_name, data.consume_type, data.message_model, data.consume_from_where
            )
        else:
            info.consume_type = data.consume_type
            info.message_model = data.message_model
            info.consume_from_where = data.consume_from_where
        member = info.members.get(conn)
        changed = member is None or member.client_id != client_id
        info.members[conn] = Member(client_id, language, version, self._clock())
        self._groups_of.setdefault(conn, set()).add(data.group_name)
        return self._update_subscriptions(info, data.subscription_data_set) or changed

    @staticmethod
    def _update_subscriptions(info: ConsumerGroup, subs: list[SubscriptionData]) -> bool:
        changed = False
        incoming = {s.topic: s for s in subs}
        for topic, sub in incoming.items():
            old = info.subscriptions.get(topic)
            if old is None:
                info.subscriptions[topic] = sub
                changed = True
            elif sub.sub_version > old.sub_version:
                info.subscriptions[topic] = sub
        for topic in [t for t in info.subscriptions if t not in incoming]:
            del info.subscriptions[topic]
            changed = True
        return changed

    def unregister(self, group: str, conn: Connection, client_id: str) -> bool:
        """UNREGISTER_CLIENT: remove the member on `conn` (or any member with `client_id`);
        True when someone was removed."""
        info = self._groups.get(group)
        if info is None:
            return False
        gone = [c for c, m in info.members.items() if c is conn or m.client_id == client_id]
        for c in gone:
            self._leave(info, c)
        return bool(gone)

    def remove_connection(self, conn: Connection) -> list[str]:
        """A closed connection leaves every group; the groups it left."""
        left: list[str] = []
        for name in sorted(self._groups_of.pop(conn, set())):
            info = self._groups.get(name)
            if info is not None and info.members.pop(conn, None) is not None:
                left.append(name)
                if not info.members:
                    del self._groups[name]
        return left

    def silent_connections(self, older_than_s: float) -> list[Connection]:
        """Members whose last heartbeat is older than `older_than_s` (to be closed)."""
        limit = self._clock() - older_than_s
        return [
            conn
            for conn, names in self._groups_of.items()
            if all(
                (m := self._groups[n].members.get(conn)) is None or m.last_heartbeat < limit
                for n in names
                if n in self._groups
            )
        ]

    def _leave(self, info: ConsumerGroup, conn: Connection) -> None:
        info.members.pop(conn, None)
        names = self._groups_of.get(conn)
        if names is not None:
            names.discard(info.name)
            if not names:
                del self._groups_of[conn]
        if not info.members:
            del self._groups[info.name]
