"""Randomised fault schedules on a controller-mode group (1 controller, 3 brokers,
allAckInSyncStateSet=true), each process in its own network namespace: SIGKILL of the
master or a slave, SIGSTOP of a broker, a link cut, a broker cut off from its group but not
from clients, `tc netem` delay, packet loss by iptables drops — one after another under
steady sends.  A delay or loss this machine cannot put on (no sch_netem in the kernel, no
iptables) is skipped, saying why, in CI too.  After healing, the checker reads everything
back: nothing acknowledged lost, no message twice in one queue, each queue in send order.

Each schedule comes from a seed, printed first and named in the test id and in any failure:

    LONGBOAT_FAULT_SEED=1234 pytest tests/controller/test_fault_schedules.py
    LONGBOAT_FAULT_RUNS=10 LONGBOAT_FAULT_DURATION=60 pytest tests/controller/...

The first replays seed 1234 (several: comma-separated); the second draws 10 fresh seeds with
schedules of 60 s.  By default two fixed seeds run with schedules of 20 s.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longboat.testing.failover import SendChecker
from longboat.testing.fault_schedule import FaultKind, FaultRunner, generate, seeds_from
from longboat.testing.netns import Network, Unavailable

from .support import assert_clean, checked_cluster, eventually, finish

DEFAULT_SEEDS = (1, 8)
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
        for fault, missing in runner.skipped:
            print(f"seed {seed}: skipped {fault.describe()}: {missing}")
        assert_clean(verdict)
    except Exception as failure:
        failure.add_note(f"fault schedule of seed {seed}: {replay}")
        raise


async def _seconds_for(checker: SendChecker, sends: int) -> float:
    started = time.monotonic()
    await checker.wait_acked(len(checker.acked) + sends, timeout_s=120.0)
    return time.monotonic() - started


@pytest.mark.parametrize("impairment", ["delay", "loss"])
async def test_delay_or_loss_on_the_masters_link_loses_nothing_acknowledged(
    tmp_path: Path, network: Network, impairment: str
) -> None:
    missing = network.netem_missing if impairment == "delay" else network.iptables_missing
    if missing is not None:
        pytest.skip(f"this machine cannot put {impairment} on a link: {missing}")
    async with checked_cluster(tmp_path, controllers=1, brokers=3, placement=network) as (
        cluster,
        _,
        checker,
        first,
    ):
        master = cluster.master_of(first)
        calm = await _seconds_for(checker, 20)
        # On every path to the master, both ways: the clients' sends and its replication
        # to the slaves alike.
        if impairment == "delay":
            how = network.delay(master.name, delay_ms=100, jitter_ms=20)
        else:
            how = network.drop(master.name, loss_pct=10.0)
        try:
            impaired = await _seconds_for(checker, 20)
        finally:
            network.clear(master.name)
        print(f"20 acknowledged sends: {calm:.2f} s calm, {impaired:.2f} s under {how}")
        verdict = await finish(checker)
    assert_clean(verdict)


def test_a_delay_without_netem_is_refused_saying_why(network: Network) -> None:
    network.host("broker-0")
    if network.netem_missing is None:
        pytest.skip("this kernel has netem: the delay is put on, not refused")
    with pytest.raises(Unavailable, match="tc"):
        network.delay("broker-0", delay_ms=50)


_PORT = 7001


def _connects(addr: str) -> bool:
    try:
        socket.create_connection((addr, _PORT), timeout=2.0).close()
    except OSError:
        return False
    return True


async def test_a_total_loss_drops_every_packet_to_the_member_until_cleared(
    network: Network,
) -> None:
    if network.iptables_missing is not None:
        pytest.skip(f"this machine cannot drop packets: {network.iptables_missing}")
    addr = network.host("broker-0")
    listen = f"import socket, time; s = socket.create_server(('{addr}', {_PORT})); time.sleep(60)"
    server = subprocess.Popen([*network.prefix("broker-0"), sys.executable, "-c", listen])
    try:
        await eventually(lambda: _connects(addr))
        network.drop("broker-0", loss_pct=100.0)
        assert not _connects(addr)
        network.clear("broker-0")
        await eventually(lambda: _connects(addr))
    finally:
        server.kill()
        server.wait()
