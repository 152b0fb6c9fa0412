"""A master cut off from the controllers, its slaves and the clients by a real link cut: each
process in its own network namespace, joined by veth links to one bridge (root only)."""

from __future__ import annotations

from pathlib import Path

from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.controller import EpochEntryCache
from longboat.remoting import RemotingClient
from longboat.testing.netns import Network

from .support import assert_clean, call, checked_cluster, finish, restart_in_sync


async def test_a_master_cut_off_is_replaced_and_rejoins_after_healing(
    tmp_path: Path, network: Network
) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=3, placement=network) as (
        cluster,
        client,
        checker,
        first,
    ):
        old = cluster.master_of(first)
        network.cut(old.name)
        second = await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
        assert second.master_epoch == first.master_epoch + 1
        await checker.wait_acked(len(checker.acked) + 100)
        network.heal(old.name)
        # Healed, it is deposed: sends go on on the new master only.
        await checker.wait_acked(len(checker.acked) + 100)
        after = await cluster.replicas(client)
        assert after is not None and after.master_address == second.master_address
        # Restarted on its store, it registers, cuts what the new master lacks before the
        # store opens, and rejoins.
        await restart_in_sync(cluster, client, old, 3)
        verdict = await finish(checker)
    assert_clean(verdict)


async def epoch_cache(client: RemotingClient, addr: str) -> EpochEntryCache:
    reply = await call(client, addr, RequestCode.GET_BROKER_EPOCH_CACHE)
    assert reply.code == ResponseCode.SUCCESS, reply.remark
    return EpochEntryCache.from_json(reply.body)


async def test_a_master_cut_off_from_its_group_cuts_its_tail_live_when_it_rejoins(
    tmp_path: Path, network: Network
) -> None:
    async with checked_cluster(tmp_path, controllers=1, brokers=3, placement=network) as (
        cluster,
        client,
        checker,
        first,
    ):
        old = cluster.master_of(first)
        # Cut off from the controller, its slaves and the name server, but not from the
        # clients: until the route moves, it stores sends it can no longer replicate, and
        # acknowledges none of them.
        others = [m for m in [*cluster.controllers, *cluster.brokers, cluster.namesrv] if m]
        network.isolate(old.name, [m.name for m in others if m is not old])
        second = await cluster.wait_for(client, in_sync=1, not_master=first.master_address)
        assert second.master_address is not None
        await checker.wait_acked(len(checker.acked) + 100)
        new_master = await epoch_cache(client, second.master_address)
        new_term = next(e for e in new_master.epoch_list if e.epoch == second.master_epoch)
        tail = await epoch_cache(client, old.addr)
        assert tail.max_offset > new_term.start_offset
        # Back in touch and still running, it is deposed, cuts that tail and follows the
        # new master: all three in sync again with no restart.
        network.rejoin(old.name)
        await cluster.wait_for(client, in_sync=3)
        assert old.alive
        rejoined = await epoch_cache(client, old.addr)
        assert [(e.epoch, e.start_offset) for e in rejoined.epoch_list] == [
            (e.epoch, e.start_offset) for e in new_master.epoch_list
        ]
        verdict = await finish(checker)
    assert_clean(verdict)
