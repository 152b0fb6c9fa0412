"""Randomised fault schedules for a controller-mode cluster, replayable from their seed.

`generate(seed, duration_s)` turns a seed into a list of timed faults, one at a time, each
undone before the next begins: SIGKILL of the master or a slave (started again on its store
when the fault ends), SIGSTOP of a broker (SIGCONT), a broker cut off from its group while
clients still reach it (rejoined), its link cut (healed), or its link slowed by `tc netem`
delay or made lossy by iptables drops (cleared).  The same seed gives the same schedule on
every machine; a schedule names its targets by role ("the master", "slave 1"
of the others in name order), not by process, because which broker wins the first election
differs from run to run.

`FaultRunner` applies a schedule to a `ProcessCluster` whose members run in a `Network` of
namespaces, resolving each role when its fault begins; `heal()` undoes whatever fault is
still on (call it in a `finally`), and `settle()` waits until the group has a master and
every broker in its SyncStateSet again, none restarted.  A fault this machine cannot put on
(delay without sch_netem, loss without iptables) is skipped, its reason printed, and listed
in `skipped`.
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from longboat.remoting import RemotingClient
from longboat.testing.failover import Member, ProcessCluster
from longboat.testing.netns import Network, Unavailable


class FaultKind(enum.Enum):
    KILL = "SIGKILL"
    PAUSE = "SIGSTOP"
    CUT = "link cut"
    # Cut off from the controllers, the other brokers and the name server, not the clients.
    ISOLATE = "isolated from its group"
    DELAY = "delay"
    LOSS = "loss"


@dataclass(frozen=True, slots=True)
class Fault:
    """`kind` on the master (`slave` is None) or on the `slave`-th slave, from `at_s` seconds
    after the schedule starts, for `lasts_s` seconds."""

    at_s: float
    lasts_s: float
    kind: FaultKind
    slave: int | None
    delay_ms: int = 0
    loss_pct: float = 0.0

    @property
    def target(self) -> str:
        return "master" if self.slave is None else f"slave {self.slave}"

    @property
    def what(self) -> str:
        if self.kind is FaultKind.DELAY:
            return f"delay {self.delay_ms} ms"
        if self.kind is FaultKind.LOSS:
            return f"loss {self.loss_pct:g} %"
        return self.kind.value

    def describe(self) -> str:
        return f"t={self.at_s:5.1f}s +{self.lasts_s:.1f}s {self.what} on the {self.target}"


@dataclass(frozen=True, slots=True)
class Schedule:
    seed: int
    faults: tuple[Fault, ...]

    def describe(self) -> str:
        lines = [f"fault schedule, seed {self.seed}:"]
        return "\n".join(lines + [f"  {f.describe()}" for f in self.faults])


def generate(seed: int, duration_s: float = 20.0, slaves: int = 2) -> Schedule:
    """The schedule of `seed`: faults of 2 to 5 s with 2 to 4 s of calm between them,
    all within `duration_s`."""
    rng = random.Random(seed)
    faults: list[Fault] = []
    at = rng.uniform(1.0, 3.0)
    while True:
        lasts = round(rng.uniform(2.0, 5.0), 1)
        if at + lasts > duration_s:
            break
        kind = rng.choice(list(FaultKind))
        slave = None if rng.random() < 0.5 else rng.randrange(slaves)
        delay = rng.choice([20, 50, 100, 200]) if kind is FaultKind.DELAY else 0
        loss = rng.choice([1.0, 5.0, 10.0, 30.0]) if kind is FaultKind.LOSS else 0.0
        faults.append(Fault(round(at, 1), lasts, kind, slave, delay, loss))
        at += lasts + rng.uniform(2.0, 4.0)
    return Schedule(seed, tuple(faults))


def seeds_from(env: dict[str, str], default: tuple[int, ...]) -> list[int]:
    """The seeds to run: LONGBOAT_FAULT_SEED (one, or several comma-separated) replays
    those; LONGBOAT_FAULT_RUNS=N draws N fresh ones; else `default`."""
    if env.get("LONGBOAT_FAULT_SEED"):
        return [int(s) for s in env["LONGBOAT_FAULT_SEED"].split(",")]
    if env.get("LONGBOAT_FAULT_RUNS"):
        return [random.randrange(1, 2**31) for _ in range(int(env["LONGBOAT_FAULT_RUNS"]))]
    return list(default)


class FaultRunner:
    """Applies a schedule's faults to `cluster` at their times, printing each through `log`."""

    def __init__(
        self,
        cluster: ProcessCluster,
        network: Network,
        client: RemotingClient,
        log: Callable[[str], None] = print,
    ) -> None:
        self.cluster = cluster
        self.network = network
        self.client = client
        self.log = log
        self._undo: Callable[[], None] | None = None
        self.skipped: list[tuple[Fault, str]] = []

    async def run(self, schedule: Schedule) -> None:
        self.log(schedule.describe())
        start = time.monotonic()
        for fault in schedule.faults:
            await _sleep_until(start + fault.at_s)
            member = await self._resolve(fault)
            now = time.monotonic() - start
            self.log(f"t={now:5.1f}s {fault.what} on the {fault.target}: {member.name}")
            try:
                self._undo = self._apply(fault, member)
            except Unavailable as missing:
                self.log(f"  skipped, this machine cannot: {missing}")
                self.skipped.append((fault, str(missing)))
                continue
            await _sleep_until(start + fault.at_s + fault.lasts_s)
            self.heal()
            self.log(f"t={time.monotonic() - start:5.1f}s undone on {member.name}")

    def heal(self) -> None:
        """Undo the fault still on, if any."""
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    async def settle(self, timeout_s: float = 60.0) -> None:
        """Wait until the group has a master and every broker in its SyncStateSet, each
        back without a restart (a deposed master cuts its unacknowledged tail live);
        AssertionError after `timeout_s`."""
        brokers = len(self.cluster.brokers)
        await self.cluster.wait_for(self.client, in_sync=brokers, timeout_s=timeout_s)

    async def _resolve(self, fault: Fault) -> Member:
        """The member in the fault's role now: the master the controller names (waiting
        for one to be elected), or the `slave`-th of the others by name."""
        info = await self.cluster.wait_until(self.client, lambda i: bool(i.master_address))
        master = self.cluster.master_of(info)
        if fault.slave is None:
            return master
        slaves = sorted((m for m in self.cluster.brokers if m is not master), key=lambda m: m.name)
        return slaves[fault.slave % len(slaves)]

    def _apply(self, fault: Fault, member: Member) -> Callable[[], None]:
        """Begin `fault` on `member`; returns what ends it.  Raises `Unavailable` (nothing
        begun) where this machine cannot put the fault's delay or loss on a link."""
        match fault.kind:
            case FaultKind.KILL:
                member.kill()
                return member.start
            case FaultKind.PAUSE:
                member.pause()
                return member.resume
            case FaultKind.CUT:
                self.network.cut(member.name)
                return lambda: self.network.heal(member.name)
            case FaultKind.ISOLATE:
                others = [self.cluster.namesrv, *self.cluster.controllers, *self.cluster.brokers]
                self.network.isolate(member.name, [m.name for m in others if m and m is not member])
                return lambda: self.network.rejoin(member.name)
            case FaultKind.DELAY:
                how = self.network.delay(
                    member.name, delay_ms=fault.delay_ms, jitter_ms=fault.delay_ms // 5
                )
            case FaultKind.LOSS:
                how = self.network.drop(member.name, loss_pct=fault.loss_pct)
        self.log(f"  {member.name}'s link: {how}")
        return lambda: self.network.clear(member.name)


async def _sleep_until(deadline: float) -> None:
    await asyncio.sleep(max(0.0, deadline - time.monotonic()))
