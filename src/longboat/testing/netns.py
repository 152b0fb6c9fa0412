"""A network of Linux network namespaces for partition tests (root only).

Each member gets a namespace of its own with one veth link to a bridge in this namespace, an
address on a private /24, and runs its command under `ip netns exec`; this process reaches
every member through the bridge.  `cut(name)` takes the member's link down — a partition that
is a link cut, not a mock: its connections stay open and hear nothing — and `heal(name)`
brings it back.  `isolate(name, others)` is a partial partition: the member's namespace
routes every packet it sends to those members into a blackhole, so it is cut off from them
while this process and everyone else still reach it; `rejoin(name)` lifts it.
`delay(name, ...)` puts `tc netem` delay on the member's link, both ways, where the kernel
has sch_netem; `drop(name, ...)` loses a share of its packets, both ways, by iptables
`statistic` rules in its namespace; `clear(name)` takes either off.  Where the machine lacks
what one needs, it raises `Unavailable` saying what is missing (`netem_missing`,
`iptables_missing` tell beforehand).
Names are random, so runs side by side do not collide; `close()` removes
every namespace and the bridge.
"""

from __future__ import annotations

import functools
import random
import shutil
import subprocess
import uuid


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _tc(*args: str, check: bool = True) -> None:
    subprocess.run(["tc", *args], check=check, capture_output=True)


class Unavailable(Exception):
    """This machine cannot put that impairment on a link; the message says what is missing."""


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
        self._dropping: dict[str, list[list[str]]] = {}
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
    def netem_missing(self) -> str | None:
        """Why `tc netem` cannot run here (the kernel's answer: no sch_netem), or None.
        Probed once, by adding netem to the bridge and taking it off."""
        if shutil.which("tc") is None:
            return "tc not found (iproute2)"
        added = subprocess.run(
            ["tc", "qdisc", "add", "dev", self.bridge, "root", "netem", "delay", "1ms"],
            capture_output=True,
            text=True,
        )
        if added.returncode != 0:
            return f"tc netem: {added.stderr.strip() or f'exit {added.returncode}'}"
        _tc("qdisc", "del", "dev", self.bridge, "root", check=False)
        return None

    @functools.cached_property
    def iptables_missing(self) -> str | None:
        """Why `drop` cannot run here (no iptables, or no `statistic` match in the kernel),
        or None.  Probed once, with a rule like `drop`'s in a namespace of its own."""
        if shutil.which("iptables") is None:
            return "iptables not found"
        probe = self.namespace("probe")
        _ip("netns", "add", probe)
        try:
            added = subprocess.run(
                ["ip", "netns", "exec", probe, "iptables", "-w", "-A", "OUTPUT", *_random_drop(1)],
                capture_output=True,
                text=True,
            )
        finally:
            subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        if added.returncode != 0:
            return f"iptables statistic: {added.stderr.strip() or f'exit {added.returncode}'}"
        return None

    def delay(self, name: str, *, delay_ms: int, jitter_ms: int = 0) -> str:
        """Every packet to and from the member delayed `delay_ms` (± `jitter_ms`): `tc netem`
        on both ends of its link.  Returns the qdisc; raises `Unavailable` where the kernel
        has no netem (nothing else here holds a packet back for a time)."""
        if self.netem_missing is not None:
            raise Unavailable(self.netem_missing)
        netem = ["netem", "delay", f"{delay_ms}ms", f"{jitter_ms}ms"]
        _tc("qdisc", "replace", "dev", self._links[name], "root", *netem)
        inside = self._inside[name]
        _tc("-n", self.namespace(name), "qdisc", "replace", "dev", inside, "root", *netem)
        return "tc " + " ".join(netem)

    def drop(self, name: str, *, loss_pct: float) -> str:
        """Every packet to and from the member lost with probability `loss_pct` %: iptables
        `statistic` rules on its link in its namespace, one for INPUT and one for OUTPUT.
        Iptables rather than netem's loss, so that loss runs on kernels without sch_netem
        too.  Returns what it put on; raises `Unavailable` where iptables cannot."""
        if self.iptables_missing is not None:
            raise Unavailable(self.iptables_missing)
        inside = self._inside[name]
        rules = [
            ["INPUT", "-i", inside, *_random_drop(loss_pct)],
            ["OUTPUT", "-o", inside, *_random_drop(loss_pct)],
        ]
        for rule in rules:
            self._iptables(name, "-A", rule)
            self._dropping.setdefault(name, []).append(rule)
        return f"iptables statistic: {loss_pct:g} % dropped each way"

    def clear(self, name: str) -> None:
        """Take `delay`'s qdiscs and `drop`'s rules off the member's link (nothing to do if
        none)."""
        _tc("qdisc", "del", "dev", self._links[name], "root", check=False)
        inside = self._inside[name]
        _tc("-n", self.namespace(name), "qdisc", "del", "dev", inside, "root", check=False)
        for rule in self._dropping.pop(name, []):
            self._iptables(name, "-D", rule)

    def _iptables(self, name: str, action: str, rule: list[str]) -> None:
        _ip("netns", "exec", self.namespace(name), "iptables", "-w", action, *rule)

    def close(self) -> None:
        for name in self._hosts:
            subprocess.run(["ip", "netns", "del", self.namespace(name)], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


def _random_drop(loss_pct: float) -> list[str]:
    """An iptables match and target: drop each packet with probability `loss_pct` %."""
    probability = f"{loss_pct / 100:.4f}"
    return ["-m", "statistic", "--mode", "random", "--probability", probability, "-j", "DROP"]
