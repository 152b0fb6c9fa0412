"""A network of Linux network namespaces for partition tests (root only).

Each member gets a namespace of its own with one veth link to a bridge in this namespace, an
address on a private /24, and runs its command under `ip netns exec`; this process reaches
every member through the bridge.  `cut(name)` takes the member's link down — a partition that
is a link cut, not a mock: its connections stay open and hear nothing — and `heal(name)`
brings it back.  `isolate(name, others)` is a partial partition: the member's namespace
routes every packet it sends to those members into a blackhole, so it is cut off from them
while this process and everyone else still reach it; `rejoin(name)` lifts it.
`impair(name, ...)` puts `tc netem` delay and loss on the member's link, both ways (a token
bucket where the kernel has no netem), and `clear(name)` takes it off.
Names are random, so runs side by side do not collide; `close()` removes
every namespace and the bridge.
"""

from __future__ import annotations

import functools
import random
import subprocess
import uuid


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _tc(*args: str, check: bool = True) -> None:
    subprocess.run(["tc", *args], check=check, capture_output=True)


class Network:
    def __init__(self) -> None:
        token = uuid.uuid4().hex[:6]
        self.token = token
        self.bridge = f"lbbr{token}"
        rng = random.Random()
        self._subnet = f"10.{rng.randint(100, 250)}.{rng.randint(0, 255)}"
        self._hosts: dict[str, str] = {}
        self._links: dict[str, str] = {}
        self._inside: dict[str, str] = {}
        self._isolated: dict[str, list[str]] = {}
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self._subnet}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def namespace(self, name: str) -> str:
        return f"lb{self.token}-{name}"

    def host(self, name: str) -> str:
        """The member's address, creating its namespace and link on first use."""
        if name not in self._hosts:
            self._add(name)
        return self._hosts[name]

    def prefix(self, name: str) -> list[str]:
        self.host(name)
        return ["ip", "netns", "exec", self.namespace(name)]

    def _add(self, name: str) -> None:
        n = len(self._hosts) + 2
        ns = self.namespace(name)
        outside, inside = f"lbh{self.token}{n}", f"lbn{self.token}{n}"
        _ip("netns", "add", ns)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", ns)
        _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        _ip("-n", ns, "addr", "add", f"{self._subnet}.{n}/24", "dev", inside)
        _ip("-n", ns, "link", "set", inside, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        self._hosts[name] = f"{self._subnet}.{n}"
        self._links[name] = outside
        self._inside[name] = inside

    def cut(self, name: str) -> None:
        _ip("link", "set", self._links[name], "down")

    def heal(self, name: str) -> None:
        _ip("link", "set", self._links[name], "up")

    def isolate(self, name: str, others: list[str]) -> None:
        ns = self.namespace(name)
        self._isolated[name] = [self.host(other) for other in others]
        for addr in self._isolated[name]:
            _ip("-n", ns, "route", "add", "blackhole", f"{addr}/32")

    def rejoin(self, name: str) -> None:
        for addr in self._isolated.pop(name, []):
            _ip("-n", self.namespace(name), "route", "del", "blackhole", f"{addr}/32")

    @functools.cached_property
    def has_netem(self) -> bool:
        """Whether this kernel has `tc netem` (sch_netem): probed once on the bridge."""
        added = subprocess.run(
            ["tc", "qdisc", "add", "dev", self.bridge, "root", "netem", "delay", "1ms"],
            capture_output=True,
        )
        _tc("qdisc", "del", "dev", self.bridge, "root", check=False)
        return added.returncode == 0

    def impair(self, name: str, *, delay_ms: int, jitter_ms: int = 0, loss_pct: float = 0) -> str:
        """Slow the member's link, both ways, and say how.

        `tc netem`: every packet to and from it delayed by `delay_ms` (± `jitter_ms`) and
        lost with probability `loss_pct` %.  A kernel without sch_netem gets a token bucket
        (`tbf`) instead: 64 kbit/s, a packet queued longer than `delay_ms` dropped — a slow
        link whose delay and loss come from its queue, not from a draw."""
        if self.has_netem:
            qdisc = ["netem", "delay", f"{delay_ms}ms", f"{jitter_ms}ms", "loss", f"{loss_pct}%"]
        else:
            qdisc = ["tbf", "rate", "64kbit", "burst", "4kb", "latency", f"{delay_ms}ms"]
        _tc("qdisc", "replace", "dev", self._links[name], "root", *qdisc)
        inside = self._inside[name]
        _tc("-n", self.namespace(name), "qdisc", "replace", "dev", inside, "root", *qdisc)
        return " ".join(qdisc)

    def clear(self, name: str) -> None:
        """Take `impair`'s qdisc off the member's link (nothing to do if none)."""
        _tc("qdisc", "del", "dev", self._links[name], "root", check=False)
        inside = self._inside[name]
        _tc("-n", self.namespace(name), "qdisc", "del", "dev", inside, "root", check=False)

    def close(self) -> None:
        for name in self._hosts:
            subprocess.run(["ip", "netns", "del", self.namespace(name)], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
