"""Randomised fault schedules on a controller-mode group (1 controller, 3 brokers,
allAckInSyncStateSet=true), each process in its own network namespace: SIGKILL of the
master or a slave, SIGSTOP of a broker, a link cut, `tc netem` delay and loss — one after
another under steady sends.  After healing, the checker reads everything back: nothing
acknowledged lost, no message twice in one queue, each queue in send order.

Each schedule comes from a seed, printed first and named in the test id and in any failure:

    LONGBOAT_FAULT_SEED=1234 pytest tests/controller/test_fault_schedules.py
    LONGBOAT_FAULT_RUNS=10 LONGBOAT_FAULT_DURATION=60 pytest tests/controller/...

The first replays seed 1234 (several: comma-separated); the second draws 10 fresh seeds with
schedules of 60 s.  By default two fixed seeds run with schedules of 20 s.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import pytest

from longboat.testing.failover import SendChecker
from longboat.testing.fault_schedule import FaultKind, FaultRunner, generate, seeds_from
from longboat.testing.netns import Network

from .support import assert_clean, checked_cluster, finish

DEFAULT_SEEDS = (269, 271)
SEEDS = seeds_from(dict(os.environ), DEFAULT_SEEDS)
DURATION_S = float(os.environ.get("LONGBOAT_FAULT_DURATION", "20"))


def test_a_seed_gives_one_schedule_of_faults_one_at_a_time() -> None:
    assert generate(1234) == generate(1234)
    assert generate(1234) != generate(1235)
    kinds = set()
    for seed in range(200):
        faults = generate(seed, 20.0).faults
        assert faults, f"seed {seed} has no fault"
        for fault, after in itertools.pairwise(faults):
            assert fault.at_s + fault.lasts_s < after.at_s
        assert faults[-1].at_s + faults[-1].lasts_s <= 20.0
        kinds |= {(f.kind, f.slave is None) for f in faults}
    # Every kind of fault falls on the master and on a slave under some seed.
    assert kinds == {(k, on_master) for k in FaultKind for on_master in (True, False)}


@pytest.mark.timeout(max(300.0, DURATION_S + 240))
@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed={s}")
async def test_a_randomised_fault_schedule_loses_nothing_acknowledged(
    tmp_path: Path, network: Network, seed: int
) -> None:
    schedule = generate(seed, DURATION_S)
    replay = f"replay with LONGBOAT_FAULT_SEED={seed} LONGBOAT_FAULT_DURATION={DURATION_S:g}"
    print(f"seed {seed} ({replay})")
    try:
        async with checked_cluster(tmp_path, controllers=1, brokers=3, placement=network) as (
            cluster,
            client,
            checker,
            _,
        ):
            runner = FaultRunner(cluster, network, client)
            try:
                await runner.run(schedule)
            finally:
                runner.heal()
            await runner.settle()
            verdict = await finish(checker)
        assert_clean(verdict)
    except Exception as failure:
        failure.add_note(f"fault schedule of seed {seed}: {replay}")
        raise


async def _seconds_for(checker: SendChecker, sends: int) -> float:
    started = time.monotonic()
    await checker.wait_acked(len(checker.acked) + sends, timeout_s=120.0)
    return time.monotonic() - started


async def test_delay_and_loss_on_the_masters_link_slow_sends_and_lose_nothing_acknowledged(
    tmp_path: Path, network: Network
) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=3, placement=network) as (
        cluster,
        _,
        checker,
        first,
    ):
        master = cluster.member_at(first.master_address)
        assert master is not None
        calm = await _seconds_for(checker, 20)
        # 100 ms (± 20) each way and 5 % of packets lost, on every path to the master: the
        # clients' sends and its replication to the slaves alike (a token bucket's queue
        # where the kernel has no netem).
        qdisc = network.impair(master.name, delay_ms=100, jitter_ms=20, loss_pct=5.0)
        try:
            impaired = await _seconds_for(checker, 20)
        finally:
            network.clear(master.name)
        print(f"20 acknowledged sends: {calm:.2f} s calm, {impaired:.2f} s under {qdisc}")
        verdict = await finish(checker)
    assert_clean(verdict)
