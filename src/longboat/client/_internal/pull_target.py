"""Which broker of a group a queue is read from: its master, or a slave when the broker says
so or the master cannot be reached.

RocketMQ's rules (PullAPIWrapper, MQClientInstance.findBrokerAddressInSubscribe): every pull
answer carries `suggestWhichBrokerId`, and the next pull of that queue goes to that broker id
(a master suggests a slave to a consumer far behind, when the broker allows slave reads; a
slave suggests the master once the consumer caught up).  The id is looked up in the group's
addresses: the id itself, for a slave id the next one, else any address the route lists —
so a master dropped from the routes leaves its queues to the slave.

What Java lacks, added here: an address a request could not reach (connection refused or
lost, no answer) is avoided for `avoid_s` seconds, whatever the suggestions, so a killed
master's queues move to the slave at the first failed pull instead of when the name server
drops the master (up to 120 s) and the client's next route refresh sees it (30 s).  Once the
time passes the address is tried again: a restarted master takes its queues back.

State (per client instance, on its event loop):

    suggested:  message queue → broker id of the last answer (absent: the master)
    avoided:    address → monotonic time until which it is not chosen

Invariant: `choose` returns an address the route lists; an avoided one only when every
address of the group is avoided (a pull must go somewhere; it fails and backs off).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from longboat.protocol.types import MASTER_ID, MessageQueue

# How long an address that failed is left alone (the consumer's pulls of it go elsewhere).
AVOID_S = 5.0


class PullTargets:
    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, avoid_s: float = AVOID_S
    ) -> None:
        self._clock = clock
        self.avoid_s = avoid_s
        self._suggested: dict[MessageQueue, int] = {}
        self._avoided: dict[str, float] = {}

    def suggest(self, mq: MessageQueue, broker_id: int) -> None:
        """A pull answer's suggestWhichBrokerId for the queue's next pull."""
        if broker_id == MASTER_ID:
            self._suggested.pop(mq, None)
        else:
            self._suggested[mq] = broker_id

    def suggested(self, mq: MessageQueue) -> int:
        return self._suggested.get(mq, MASTER_ID)

    def unreachable(self, addr: str) -> None:
        """A request to `addr` failed in transport: choose others for a while."""
        self._avoided[addr] = self._clock() + self.avoid_s

    def reachable(self, addr: str) -> None:
        """`addr` answered: it may be chosen again at once."""
        self._avoided.pop(addr, None)

    def avoided(self, addr: str) -> bool:
        until = self._avoided.get(addr)
        if until is None:
            return False
        if self._clock() >= until:
            del self._avoided[addr]
            return False
        return True

    def choose(self, mq: MessageQueue, addrs: dict[int, str]) -> tuple[int, str] | None:
        """(broker id, address) to pull `mq` from among its group's `addrs`; None when the
        group has no address at all."""
        if not addrs:
            return None
        want = self.suggested(mq)
        order = [want]
        if want != MASTER_ID:
            order.append(want + 1)
        order += sorted(addrs)
        candidates = [(bid, addrs[bid]) for bid in dict.fromkeys(order) if bid in addrs]
        for bid, addr in candidates:
            if not self.avoided(addr):
                return bid, addr
        return candidates[0]

    def master_reachable(self, addrs: dict[int, str]) -> str | None:
        """The group's master address, unless the route lacks it or it is avoided."""
        addr = addrs.get(MASTER_ID)
        return None if addr is None or self.avoided(addr) else addr
