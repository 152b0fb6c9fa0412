"""A master cut off from the controllers, its slaves and the clients by a real link cut: each
process in its own network namespace, joined by veth links to one bridge (root only)."""

from __future__ import annotations

from pathlib import Path

from longboat.testing.netns import Network

from .support import assert_clean, checked_cluster, finish, restart_in_sync


async def test_a_master_cut_off_is_replaced_and_rejoins_after_healing(
    tmp_path: Path, network: Network
) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=3, placement=network) as (
        cluster,
        client,
        checker,
        first,
    ):
        old = cluster.member_at(first.master_address)
        assert old is not None
        network.cut(old.name)
        second = await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
        assert second.master_epoch == first.master_epoch + 1
        await checker.wait_acked(len(checker.acked) + 100)
        network.heal(old.name)
        # Healed, it is deposed: sends go on on the new master only.
        await checker.wait_acked(len(checker.acked) + 100)
        after = await cluster.replicas(client)
        assert after is not None and after.master_address == second.master_address
        # If it stored sends nobody acknowledged, it follows only after a restart cuts them.
        await restart_in_sync(cluster, client, old, 3)
        verdict = await finish(checker)
    assert_clean(verdict)
