"""Controller-mode failover with real processes: SIGKILL of the master under steady sends
(once, and twice in a row), of the leading controller, and of every node at once; a paused
slave and a paused master.  The checker records every acknowledged send and reads the
topic back: nothing acknowledged lost (allAckInSyncStateSet=true), no message twice in one
queue, each queue in send order."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from longboat.client.errors import ClientError
from longboat.client.message import Message, SendStatus
from longboat.protocol.controller import ReplicasInfo
from longboat.testing.failover import ProcessCluster, SendChecker

from .support import assert_clean, checked_cluster, finish, kill_master, restart_in_sync


def test_the_master_named_is_a_broker_of_the_cluster_or_the_test_fails_saying_so(
    tmp_path: Path,
) -> None:
    cluster = ProcessCluster.build(tmp_path, brokers=2)  # built, not started
    second = cluster.brokers[1]
    assert cluster.master_of(ReplicasInfo(2, second.addr, 1, 1)) is second
    with pytest.raises(AssertionError, match=r"the master None is none of broker-0 at "):
        cluster.master_of(ReplicasInfo(None, None, 0, 0))


async def test_sigkill_of_the_master_under_steady_sends(tmp_path: Path) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=3) as (
        cluster,
        client,
        checker,
        first,
    ):
        old, _ = await kill_master(cluster, client, checker, first)
        # The former master comes back: it cuts what it alone had and rejoins as a slave.
        await restart_in_sync(cluster, client, old, 3)
        verdict = await finish(checker)
    assert_clean(verdict)


async def test_sigkill_of_the_leading_controller(tmp_path: Path) -> None:
    async with checked_cluster(tmp_path, controllers=3, brokers=2) as (
        cluster,
        client,
        checker,
        first,
    ):
        leader = await cluster.leading_controller(client)
        assert leader is not None
        leader.kill()
        # Sends go on; the surviving controllers elect a leader with the same table, and it
        # still elects a new master when the old one dies.
        await checker.wait_acked(len(checker.acked) + 100)
        after = await cluster.wait_for(client, in_sync=2)
        assert after.master_address == first.master_address
        assert after.master_epoch == first.master_epoch
        old = cluster.master_of(first)
        old.kill()
        second = await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
        assert second.master_epoch == first.master_epoch + 1
        verdict = await finish(checker)
    assert_clean(verdict)


async def test_a_paused_slave_leaves_the_sync_state_set_and_comes_back(tmp_path: Path) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=3) as (
        cluster,
        client,
        checker,
        first,
    ):
        slave = next(r for r in first.in_sync_replicas if r.broker_id != first.master_broker_id)
        member = cluster.member_at(slave.broker_address)
        assert member is not None
        member.pause()
        # It stops acknowledging: the master drops it, and sends are acknowledged again
        # without it.
        shrunk = await cluster.wait_until(
            client, lambda i: slave.broker_id not in {r.broker_id for r in i.in_sync_replicas}
        )
        assert shrunk.sync_state_set_epoch > first.sync_state_set_epoch
        await checker.wait_acked(len(checker.acked) + 100)
        member.resume()
        await cluster.wait_for(client, in_sync=3)
        await checker.wait_acked(len(checker.acked) + 100)
        # Still in sync as far as every acknowledged send goes: the master may fail now.
        old = cluster.master_of(first)
        old.kill()
        await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
        verdict = await finish(checker)
    assert_clean(verdict)


async def test_a_paused_master_is_deposed_and_fenced_then_rejoins(tmp_path: Path) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=3) as (
        cluster,
        client,
        checker,
        first,
    ):
        old = cluster.master_of(first)
        old.pause()  # alive to the kernel, silent to the controller and its slaves
        second = await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
        await checker.wait_acked(len(checker.acked) + 100)
        old.resume()
        # Back, it finds itself deposed: no send is acknowledged by it any more.
        await checker.wait_acked(len(checker.acked) + 100)
        third = await cluster.replicas(client)
        assert third is not None and third.master_address == second.master_address
        # Restarted, it cuts what it alone had and rejoins.
        await restart_in_sync(cluster, client, old, 3)
        verdict = await finish(checker)
    assert_clean(verdict)


async def test_delayed_messages_are_delivered_by_the_master_of_the_moment(tmp_path: Path) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=2) as (
        cluster,
        client,
        checker,
        first,
    ):
        delayed = SendChecker(checker.config.namesrv_addrs[0], topic="FailoverDelayed")
        await delayed.producer.start()
        try:
            before = await delayed.producer.send(Message("FailoverDelayed", b"0", delay_level=1))
            assert before.status is SendStatus.SEND_OK
            old = cluster.master_of(first)
            old.kill()
            await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
            # The new master serves the topic once its copy of the old master's topic table
            # is registered: until then a send finds no queue.
            deadline = time.monotonic() + 30
            while True:
                try:
                    after = await delayed.producer.send(
                        Message("FailoverDelayed", b"1", delay_level=1)
                    )
                    break
                except ClientError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)
            assert after.status is SendStatus.SEND_OK
            # Both come out on the new master, the first one whether or not the old master
            # had delivered it before it died (delivery is at least once).
            deadline = time.monotonic() + 30
            bodies: list[bytes] = []
            while not {b"0", b"1"} <= set(bodies) and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                with contextlib.suppress(ClientError):  # the route may not be there yet
                    bodies = await delayed.read_back()
            assert {b"0", b"1"} <= set(bodies)
        finally:
            await delayed.producer.shutdown()
        assert_clean(await finish(checker))


async def test_two_successive_failovers(tmp_path: Path) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=2) as (
        cluster,
        client,
        checker,
        first,
    ):
        masters = [first]
        for _ in range(2):
            # The new master accepts sends, then the old one rejoins as its slave and syncs.
            old, new = await kill_master(cluster, client, checker, masters[-1])
            await restart_in_sync(cluster, client, old, 2)
            await checker.wait_acked(len(checker.acked) + 100)
            masters.append(new)
        # With two brokers the second failover hands the group back to the first master.
        assert masters[2].master_address == first.master_address
        verdict = await finish(checker)
    assert_clean(verdict)


async def test_a_restart_of_every_node_keeps_the_data_and_elects_a_master(tmp_path: Path) -> None:
    async with checked_cluster(tmp_path, controllers=3, brokers=2) as (
        cluster,
        client,
        checker,
        first,
    ):
        # Everything dies at once, the checker still sending; then everything comes back.
        for member in [*cluster.brokers, *cluster.controllers]:
            member.kill()
        acked_before = len(checker.acked)
        for member in [*cluster.controllers, *cluster.brokers]:
            member.start()
        after = await cluster.wait_for(client, in_sync=2)
        assert after.master_epoch >= first.master_epoch
        await checker.wait_acked(acked_before + 100)
        verdict = await finish(checker)
    assert_clean(verdict)
