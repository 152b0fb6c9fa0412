"""Which brokers are alive, as the leading controller hears them (BROKER_HEARTBEAT, 904).

Per (broker name, broker id): the time of the last heartbeat, its timeout (the broker's
`heartbeatTimeoutMills`, 10 s when it sends none) and what the election compares (epoch,
log end, priority).  A broker is alive while its last heartbeat is younger than its timeout.

Heartbeats go to the leader only, so a controller that has just become leader knows none:
for one default timeout after `reset` a broker it has not heard from yet counts as alive
(as it was, as far as anyone knows), so a new leader neither elects around a living master
nor refuses its SyncStateSet changes.  The clock is passed in: tests drive it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from longboat.controller.replicas import LiveInfo

DEFAULT_TIMEOUT_S = 10.0


@dataclass(slots=True)
class _Seen:
    at: float
    timeout_s: float
    info: LiveInfo
    address: str


class BrokerHeartbeats:
    def __init__(self, now: float, default_timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.default_timeout_s = default_timeout_s
        self._seen: dict[tuple[str, int], _Seen] = {}
        self._since = now

    def reset(self, now: float) -> None:
        """Forget everything: this controller has just become the leader."""
        self._seen.clear()
        self._since = now

    def beat(
        self, broker_name: str, address: str, info: LiveInfo, now: float, timeout_s: float | None
    ) -> None:
        self._seen[(broker_name, info.broker_id)] = _Seen(
            now, timeout_s or self.default_timeout_s, info, address
        )

    def forget(self, broker_name: str, broker_id: int) -> None:
        self._seen.pop((broker_name, broker_id), None)

    def is_alive(self, broker_name: str, broker_id: int, now: float) -> bool:
        seen = self._seen.get((broker_name, broker_id))
        if seen is None:
            return now - self._since < self.default_timeout_s
        return now - seen.at < seen.timeout_s

    def alive_ids(self, broker_name: str, members: list[int], now: float) -> frozenset[int]:
        return frozenset(b for b in members if self.is_alive(broker_name, b, now))

    def live_infos(self, broker_name: str, members: list[int], now: float) -> tuple[LiveInfo, ...]:
        """The election's candidates: every alive member with what it last reported."""
        infos = []
        for b in members:
            if self.is_alive(broker_name, b, now):
                seen = self._seen.get((broker_name, b))
                infos.append(seen.info if seen is not None else LiveInfo(b))
        return tuple(infos)

    def in_grace(self, now: float) -> bool:
        """Still too early after `reset` to call a silent broker dead."""
        return now - self._since < self.default_timeout_s
