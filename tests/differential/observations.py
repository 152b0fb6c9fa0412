"""Scenario observations made ahead of the tests that compare them, several at a time.

A scenario mostly waits: on delay levels, retries, revive, timers, check-backs, JVMs. One after
the other, the scenarios against one system took minutes on one pytest worker. `Observations`
runs them on threads, `workers` at a time against each target (a pool per target: however many
scenarios wait on Longboat, a RocketMQ serves at most `workers` at once, in a JVM whose heap and
direct memory the suite keeps small), each in an event loop of its own (`asyncio.run`, as when
each test ran its scenario on its own loop: a scenario that blocks its loop for a moment holds
up no other), and keeps each observation, made once per (target, scenario), for the test that
compares it.

Running side by side changes nothing a scenario observes: each creates its own topics and
groups under unique names, and the systems serve them as they serve concurrent applications.
What a loaded host may change (how soon a revive or a check-back comes) the scenarios already
leave out of their observations (see differential/scenarios5.py).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor

from differential.harness import Observation, Scenario, Target, observe


def _observe_on_own_loop(scenario: Scenario, target: Target) -> Observation:
    return asyncio.run(observe(scenario, target))


class Observations:
    """Observations of scenarios against targets, started ahead (`start`), `workers` at a time
    per target, and awaited by the test comparing them (`get`); `close` waits for those running
    and drops those not begun."""

    def __init__(self, scenarios: dict[str, Scenario], workers: int) -> None:
        self._scenarios = scenarios
        self._workers = workers
        self._pools: dict[Target, ThreadPoolExecutor] = {}
        self._made: dict[tuple[Target, str], Future[Observation]] = {}

    def start(self, target: Target, name: str) -> None:
        """Queue scenario `name` against `target`, unless already queued (first come, first
        run)."""
        if (target, name) not in self._made:
            if target not in self._pools:
                self._pools[target] = ThreadPoolExecutor(self._workers, "scenario")
            self._made[target, name] = self._pools[target].submit(
                _observe_on_own_loop, self._scenarios[name], target
            )

    async def get(self, target: Target, name: str) -> Observation:
        """The observation of `name` against `target`, once made; the scenario's own
        exception if it failed."""
        self.start(target, name)
        return await asyncio.wrap_future(self._made[target, name])

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
